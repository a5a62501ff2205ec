package proxy

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// latencyBuckets are the upper bounds (seconds) of the request latency
// histogram.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// metrics are the proxy's counters, written by hand in the Prometheus text
// exposition format: HTTP requests counted by the handler, the rest fed by
// the guard's audit records. Safe for concurrent use.
type metrics struct {
	mu            sync.Mutex
	requests      map[[2]string]uint64 // destination, HTTP status class+code
	decisions     map[[2]string]uint64 // destination, allow|redact|block
	blocked       map[[2]string]uint64 // destination, content|capacity
	redacted      map[string]uint64    // destination -> values
	verdicts      map[[2]string]uint64 // destination, verdict
	contaminated  map[string]uint64    // destination
	signals       map[string]uint64    // signal ID
	latencyCounts []uint64             // per bucket, non-cumulative; last = +Inf
	latencySum    float64
	latencyN      uint64
	inFlight      int64
	limits        map[string]uint64 // limit name
	unauth        uint64
	// storeInvalid, when set, reads the fingerprint store's count of
	// records ignored for an invalid MAC.
	storeInvalid func() uint64
	signs        map[[2]string]uint64 // destination, sign of a faulty service
	quarEvents   map[[2]string]uint64 // destination, event type
	// quarantined, when set, reads each destination's quarantine at
	// scrape time (since, in Unix seconds, or 0; -1 when the store cannot
	// be read).
	quarantined func() map[string]float64
}

func newMetrics() *metrics {
	return &metrics{
		requests: map[[2]string]uint64{}, decisions: map[[2]string]uint64{}, blocked: map[[2]string]uint64{},
		redacted: map[string]uint64{}, verdicts: map[[2]string]uint64{}, contaminated: map[string]uint64{},
		signals: map[string]uint64{}, latencyCounts: make([]uint64, len(latencyBuckets)+1), limits: map[string]uint64{},
		signs: map[[2]string]uint64{}, quarEvents: map[[2]string]uint64{},
	}
}

func (m *metrics) begin() {
	m.mu.Lock()
	m.inFlight++
	m.mu.Unlock()
}

func (m *metrics) end() {
	m.mu.Lock()
	m.inFlight--
	m.mu.Unlock()
}

// limit counts a request refused or a stream cut by the limit named.
func (m *metrics) limit(name string) {
	m.mu.Lock()
	m.limits[name]++
	m.mu.Unlock()
}

// unauthenticated counts a request refused for its caller key.
func (m *metrics) unauthenticated() {
	m.mu.Lock()
	m.unauth++
	m.mu.Unlock()
}

// done records one HTTP request of the proxy API.
func (m *metrics) done(dest string, status int, d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[[2]string{dest, fmt.Sprint(status)}]++
	i := sort.SearchFloat64s(latencyBuckets, s)
	m.latencyCounts[i]++
	m.latencySum += s
	m.latencyN++
}

// record takes one audit record of the guard (sdk.Options.OnRecord).
func (m *metrics) record(rec sdk.AuditRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := rec.Destination
	if rec.Event != "" {
		m.quarEvents[[2]string{d, rec.Event}]++
		return
	}
	for s, n := range rec.Signs {
		m.signs[[2]string{d, s}] += uint64(n)
	}
	m.decisions[[2]string{d, rec.Decision}]++
	if rec.Decision == string(policies.ActionBlock) {
		why := "content"
		if rec.OverCapacity {
			why = "capacity"
		}
		m.blocked[[2]string{d, why}]++
	}
	m.redacted[d] += uint64(rec.Redacted)
	if rec.Verdict != "" {
		m.verdicts[[2]string{d, string(rec.Verdict)}]++
	}
	if rec.Verdict == sdk.VerdictContaminated {
		m.contaminated[d]++
	}
	for id, n := range rec.Signals {
		m.signals[id] += uint64(n)
	}
}

func label(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// write renders the metrics in the Prometheus text format (version 0.0.4).
func (m *metrics) write(w io.Writer) error {
	var quar map[string]float64
	if m.quarantined != nil {
		quar = m.quarantined() // reads the store: outside the lock
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	pairs := func(name, help, l1, l2 string, c map[[2]string]uint64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		keys := make([][2]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i][0] != keys[j][0] {
				return keys[i][0] < keys[j][0]
			}
			return keys[i][1] < keys[j][1]
		})
		for _, k := range keys {
			fmt.Fprintf(&b, "%s{%s=\"%s\",%s=\"%s\"} %d\n", name, l1, label(k[0]), l2, label(k[1]), c[k])
		}
	}
	singles := func(name, help, l string, c map[string]uint64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s{%s=\"%s\"} %d\n", name, l, label(k), c[k])
		}
	}
	pairs("aishield_proxy_requests_total", "HTTP requests answered by the proxy, by destination and status code.", "destination", "code", m.requests)
	pairs("aishield_decisions_total", "Outbound policy decisions, by destination and action.", "destination", "action", m.decisions)
	pairs("aishield_blocked_total", "Requests blocked before sending, by destination and reason (content or capacity).", "destination", "reason", m.blocked)
	singles("aishield_redacted_values_total", "Sensitive values replaced by placeholders before sending.", "destination", m.redacted)
	pairs("aishield_verdicts_total", "Inbound verdicts of exchanges (clean, flagged, contaminated, unverified, error, not_sent).", "destination", "verdict", m.verdicts)
	singles("aishield_contaminations_total", "Responses withheld or cut because they carried foreign material.", "destination", m.contaminated)
	singles("aishield_inbound_signals_total", "Inbound signals raised, by signal ID.", "signal", m.signals)
	singles("aishield_proxy_limit_total", "Requests refused (429, 413, 408) or streams cut by a resource limit of the proxy, by limit (concurrency, in_flight_bytes, body_size, body_timeout, stream_bytes).", "limit", m.limits)
	pairs("aishield_destination_signs_total", "Signs of a faulty service seen in answers, by destination and sign.", "destination", "sign", m.signs)
	pairs("aishield_quarantine_events_total", "Quarantines tripped and cleared, as this proxy made or learnt them, by destination and event.", "destination", "event", m.quarEvents)
	if quar != nil {
		name := "aishield_destination_quarantined"
		fmt.Fprintf(&b, "# HELP %s Whether the destination is quarantined: 1 in quarantine, 0 not, -1 the quarantine store cannot be read.\n# TYPE %s gauge\n", name, name)
		since := "aishield_destination_quarantined_since_seconds"
		var sinceLines strings.Builder
		for _, d := range slices.Sorted(maps.Keys(quar)) {
			v := quar[d]
			state := 0
			switch {
			case v < 0:
				state = -1
			case v > 0:
				state = 1
				fmt.Fprintf(&sinceLines, "%s{destination=\"%s\"} %d\n", since, label(d), int64(v))
			}
			fmt.Fprintf(&b, "%s{destination=\"%s\"} %d\n", name, label(d), state)
		}
		fmt.Fprintf(&b, "# HELP %s When the destination's quarantine tripped (Unix time), for those in quarantine.\n# TYPE %s gauge\n%s", since, since, sinceLines.String())
	}
	fmt.Fprintf(&b, "# HELP aishield_proxy_unauthenticated_total Requests refused (401) for a missing or unknown caller key.\n# TYPE aishield_proxy_unauthenticated_total counter\naishield_proxy_unauthenticated_total %d\n", m.unauth)
	if m.storeInvalid != nil {
		fmt.Fprintf(&b, "# HELP aishield_store_invalid_records_total Fingerprint store records ignored because their MAC did not verify.\n# TYPE aishield_store_invalid_records_total counter\naishield_store_invalid_records_total %d\n", m.storeInvalid())
	}
	fmt.Fprintf(&b, "# HELP aishield_proxy_in_flight_requests Requests being served.\n# TYPE aishield_proxy_in_flight_requests gauge\naishield_proxy_in_flight_requests %d\n", m.inFlight)
	name := "aishield_proxy_request_duration_seconds"
	fmt.Fprintf(&b, "# HELP %s Time to serve a request, including the upstream and the guard.\n# TYPE %s histogram\n", name, name)
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += m.latencyCounts[i]
		fmt.Fprintf(&b, "%s_bucket{le=\"%g\"} %d\n", name, ub, cum)
	}
	cum += m.latencyCounts[len(latencyBuckets)]
	fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, cum, name, m.latencySum, name, m.latencyN)
	_, err := io.WriteString(w, b.String())
	return err
}
