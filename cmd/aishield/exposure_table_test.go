package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// at is a time of the exposure tables: minute m of 2026-03-02 09:00 UTC.
func at(m int) time.Time { return time.Date(2026, 3, 2, 9, m, 0, 0, time.UTC) }

// exch is an exchange record of the tables.
func exch(m int, dest, principal string, verdict sdk.Verdict, dets, redacted map[string]int) *sdk.AuditRecord {
	return &sdk.AuditRecord{Time: at(m), Exchange: "e", Destination: dest, Principal: principal, Verdict: verdict,
		Detectors: dets, RedactedBy: redacted}
}

func withSigns(r *sdk.AuditRecord, signs ...string) *sdk.AuditRecord {
	r.Signs = map[string]int{}
	for _, s := range signs {
		r.Signs[s] = 1
	}
	r.DurationMS = 30_000
	return r
}

func event(m int, dest, typ, reason string, until time.Time) *sdk.AuditRecord {
	return &sdk.AuditRecord{Time: at(m), Exchange: "t", Destination: dest, Event: typ,
		Quarantine: &sdk.QuarantineRecord{Since: at(m), Until: until, Action: "block", Reason: reason}}
}

type periodWant struct {
	name     string
	total    int
	sent     int
	refused  int
	failover int
	values   exposureValues
}

func TestExposureAggregation(t *testing.T) {
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	email := map[string]int{"pii.email": 2}
	ip := map[string]int{"pii.ip_address": 1}
	const sent, notSent = sdk.VerdictClean, sdk.VerdictNotSent
	tests := []struct {
		name         string
		since, until time.Time
		now          time.Time
		recs         []*sdk.AuditRecord
		want         exposureRequests
		principals   string
		unattributed int
		sign         time.Time // zero: none
		trip         time.Time // zero: none
		end          string    // end reason, "" while it lasts
		delay        *exposureDelay
		periods      []periodWant
		values       map[string]exposureValues
	}{
		{
			name: "no sign, no quarantine: one period",
			recs: []*sdk.AuditRecord{
				exch(1, "openai", "alice", sent, email, map[string]int{"pii.email": 2}),
				exch(2, "openai", "bob", notSent, map[string]int{"secret.github_token": 1}, nil),
				exch(3, "anthropic", "carol", sent, ip, nil), // another destination
			},
			want:       exposureRequests{Total: 2, Sent: 1, NotSent: 1},
			principals: "alice",
			periods:    []periodWant{{name: periodBeforeSign, total: 2, sent: 1, values: exposureValues{Redacted: 2, Blocked: 1}}},
			values:     map[string]exposureValues{"pii.email": {Redacted: 2}, "secret.github_token": {Blocked: 1}},
		},
		{
			name: "sign, trip, failover away, clear",
			recs: []*sdk.AuditRecord{
				exch(1, "openai", "alice", sent, ip, nil),
				withSigns(exch(2, "openai", "bob", sent, nil, nil), "dropped_prompt"), // answer at 2:30
				exch(3, "openai", "", sent, email, map[string]int{"pii.email": 1}),    // one of two redacted
				exch(4, "openai", "carol", sent, nil, nil),
				event(5, "openai", "quarantine.tripped", "signs", time.Time{}),
				event(5, "anthropic", "quarantine.tripped", "signs", time.Time{}), // not ours
				{Time: at(6), Exchange: "f", Destination: "anthropic", Quarantined: "openai", Verdict: sent, Detectors: email},
				{Time: at(7), Exchange: "r", Destination: "openai", Quarantined: "openai", Verdict: notSent, Detectors: email},
				event(8, "openai", "quarantine.cleared", "cleared", time.Time{}),
				exch(9, "openai", "alice", sent, ip, nil),
			},
			want:         exposureRequests{Total: 6, Sent: 5, NotSent: 1, Refused: 1, FailedOver: 1},
			principals:   "alice,bob,carol",
			unattributed: 1,
			sign:         at(2).Add(30 * time.Second),
			trip:         at(5),
			end:          "cleared",
			delay:        &exposureDelay{Requests: 2, Sent: 2, Seconds: 150},
			periods: []periodWant{
				{name: periodBeforeSign, total: 2, sent: 2, values: exposureValues{Clear: 1}},
				{name: periodSignToTrip, total: 2, sent: 2, values: exposureValues{Clear: 1, Redacted: 1}},
				{name: periodQuarantined, total: 1, refused: 1, failover: 1, values: exposureValues{Blocked: 2}},
				{name: periodAfterClear, total: 1, sent: 1, values: exposureValues{Clear: 1}},
			},
			values: map[string]exposureValues{"pii.email": {Clear: 1, Redacted: 1, Blocked: 2}, "pii.ip_address": {Clear: 2}},
		},
		{
			name: "a quarantine tripped before the first sign is not its quarantine",
			recs: []*sdk.AuditRecord{
				event(1, "openai", "quarantine.tripped", "observed", time.Time{}),
				withSigns(exch(2, "openai", "bob", sent, nil, nil), "foreign_text"),
				exch(4, "openai", "carol", sent, ip, nil),
			},
			want:       exposureRequests{Total: 2, Sent: 2},
			principals: "bob,carol",
			sign:       at(2).Add(30 * time.Second),
			periods: []periodWant{
				{name: periodBeforeSign, total: 1, sent: 1},
				{name: periodSignToTrip, total: 1, sent: 1, values: exposureValues{Clear: 1}},
			},
			values: map[string]exposureValues{"pii.ip_address": {Clear: 1}},
		},
		{
			name: "a trip without a sign in the trail (another process saw it), ended by its duration",
			now:  at(59),
			recs: []*sdk.AuditRecord{
				exch(1, "openai", "alice", sent, ip, nil),
				event(2, "openai", "quarantine.tripped", "observed", at(10)),
				exch(3, "openai", "alice", notSent, ip, nil),
				exch(11, "openai", "bob", sent, ip, nil),
			},
			want:       exposureRequests{Total: 3, Sent: 2, NotSent: 1},
			principals: "alice,bob",
			trip:       at(2),
			end:        "expired",
			periods: []periodWant{
				{name: periodBeforeSign, total: 1, sent: 1, values: exposureValues{Clear: 1}},
				{name: periodQuarantined, total: 1, values: exposureValues{Blocked: 1}},
				{name: periodAfterClear, total: 1, sent: 1, values: exposureValues{Clear: 1}},
			},
			values: map[string]exposureValues{"pii.ip_address": {Clear: 2, Blocked: 1}},
		},
		{
			name: "a quarantine due to end after now still lasts",
			now:  at(5),
			recs: []*sdk.AuditRecord{
				event(2, "openai", "quarantine.tripped", "signs", at(10)),
				exch(3, "openai", "alice", notSent, ip, nil),
			},
			want: exposureRequests{Total: 1, NotSent: 1},
			trip: at(2),
			periods: []periodWant{
				{name: periodBeforeSign},
				{name: periodQuarantined, total: 1, values: exposureValues{Blocked: 1}},
			},
			values: map[string]exposureValues{"pii.ip_address": {Blocked: 1}},
		},
		{
			name:  "the window keeps records, signs and events inside it",
			since: at(3), until: at(8),
			recs: []*sdk.AuditRecord{
				withSigns(exch(1, "openai", "zed", sent, ip, nil), "dropped_prompt"),
				exch(3, "openai", "alice", sent, ip, nil),
				withSigns(exch(4, "openai", "bob", sent, nil, nil), "probe"),
				event(6, "openai", "quarantine.tripped", "signs", time.Time{}),
				exch(7, "openai", "carol", notSent, email, nil),
				exch(8, "openai", "dave", sent, ip, nil), // --until excluded
			},
			want:       exposureRequests{Total: 3, Sent: 2, NotSent: 1},
			principals: "alice,bob",
			sign:       at(4).Add(30 * time.Second),
			trip:       at(6),
			delay:      &exposureDelay{Seconds: 90},
			periods: []periodWant{
				{name: periodBeforeSign, total: 2, sent: 2, values: exposureValues{Clear: 1}},
				{name: periodSignToTrip},
				{name: periodQuarantined, total: 1, values: exposureValues{Blocked: 2}},
			},
			values: map[string]exposureValues{"pii.ip_address": {Clear: 1}, "pii.email": {Blocked: 2}},
		},
		{
			name: "unchecked requests, a response-side failure, and counts that do not add up",
			recs: []*sdk.AuditRecord{
				{Time: at(1), Destination: "openai", Verdict: sdk.VerdictUnverified, FailedOpen: sdk.StageClassify, Principal: "a"},
				{Time: at(2), Destination: "openai", Verdict: sdk.VerdictUnverified, Passthrough: true, Principal: "a"},
				{Time: at(3), Destination: "openai", Verdict: sdk.VerdictUnverified, FailedOpen: sdk.StageVerify, Principal: "a",
					Detectors: map[string]int{"pii.email": 1, "pii.ip_address": -4}, RedactedBy: map[string]int{"pii.email": 9}},
			},
			want:       exposureRequests{Total: 3, Sent: 3, Unchecked: 2},
			principals: "a",
			periods:    []periodWant{{name: periodBeforeSign, total: 3, sent: 3, values: exposureValues{Redacted: 1}}},
			values:     map[string]exposureValues{"pii.email": {Redacted: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = at(60 * 24)
			}
			b := newExposureBuilder("openai", tc.since, tc.until, now, pol)
			for _, r := range tc.recs {
				b.add(r)
			}
			rep := b.report()
			if rep.Requests != tc.want {
				t.Errorf("requests %+v, want %+v", rep.Requests, tc.want)
			}
			if got := strings.Join(rep.Principals.Names, ","); got != tc.principals || rep.Principals.Count != len(rep.Principals.Names) ||
				rep.Principals.Unattributed != tc.unattributed {
				t.Errorf("principals %+v, want %s and %d unattributed", rep.Principals, tc.principals, tc.unattributed)
			}
			switch {
			case tc.sign.IsZero() != (rep.FirstSign == nil):
				t.Errorf("first sign %+v, want %v", rep.FirstSign, tc.sign)
			case rep.FirstSign != nil && !rep.FirstSign.Time.Equal(tc.sign):
				t.Errorf("first sign at %v, want %v", rep.FirstSign.Time, tc.sign)
			}
			switch {
			case tc.trip.IsZero() != (rep.Quarantine == nil):
				t.Errorf("quarantine %+v, want %v", rep.Quarantine, tc.trip)
			case rep.Quarantine != nil && (!rep.Quarantine.Tripped.Equal(tc.trip) || rep.Quarantine.EndReason != tc.end):
				t.Errorf("quarantine %+v, want tripped %v, ended by %q", rep.Quarantine, tc.trip, tc.end)
			}
			if (tc.delay == nil) != (rep.Delay == nil) || tc.delay != nil && *tc.delay != *rep.Delay {
				t.Errorf("delay %+v, want %+v", rep.Delay, tc.delay)
			}
			if len(rep.Periods) != len(tc.periods) {
				t.Fatalf("periods %+v, want %+v", rep.Periods, tc.periods)
			}
			sum := exposureRequests{}
			for i, w := range tc.periods {
				p := rep.Periods[i]
				got := periodWant{name: p.Name, total: p.Requests.Total, sent: p.Requests.Sent, refused: p.Requests.Refused,
					failover: p.Requests.FailedOver, values: p.Values}
				if got != w {
					t.Errorf("period %d: %+v, want %+v", i, got, w)
				}
				if i > 0 && !p.From.Equal(rep.Periods[i-1].Until) {
					t.Errorf("period %d starts at %v, the one before ends at %v", i, p.From, rep.Periods[i-1].Until)
				}
				sum.Total += p.Requests.Total
				sum.Sent += p.Requests.Sent
				sum.FailedOver += p.Requests.FailedOver
			}
			if sum.Total != rep.Requests.Total || sum.Sent != rep.Requests.Sent || sum.FailedOver != rep.Requests.FailedOver {
				t.Errorf("the periods add up to %+v, the report says %+v", sum, rep.Requests)
			}
			got := map[string]exposureValues{}
			for _, l := range rep.Levels {
				var lv exposureValues
				for _, d := range l.Detectors {
					if lvl, _, _ := pol.LevelOf(d.Detector); lvl != l.Level {
						t.Errorf("%s listed under %s, its level is %s", d.Detector, l.Level, lvl)
					}
					got[d.Detector] = d.exposureValues
					lv.add(d.exposureValues)
				}
				if lv != l.exposureValues {
					t.Errorf("level %s: %+v, its detectors add up to %+v", l.Level, l.exposureValues, lv)
				}
			}
			if len(got) != len(tc.values) {
				t.Errorf("values %+v, want %+v", got, tc.values)
			}
			for d, w := range tc.values {
				if got[d] != w {
					t.Errorf("%s: %+v, want %+v", d, got[d], w)
				}
			}
			if len(rep.Levels) < len(pol.Levels) || rep.Levels[0].Level != pol.Levels[len(pol.Levels)-1] {
				t.Errorf("levels not every level, highest first: %+v", rep.Levels)
			}
		})
	}
}

// TestAuditExposureExitCodes: a broken chain exits 1, usage and input
// errors 2, and the text report of a trail without the destination says
// so plainly.
func TestAuditExposureExitCodes(t *testing.T) {
	dir := t.TempDir()
	var trail bytes.Buffer
	log := sdk.NewAuditLog(&trail, "")
	for _, r := range []*sdk.AuditRecord{
		exch(1, "openai", "alice", sdk.VerdictClean, map[string]int{"pii.email": 1}, nil),
		exch(2, "openai", "bob", sdk.VerdictClean, nil, nil),
	} {
		if err := log.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(good, trail.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, bytes.Replace(trail.Bytes(), []byte(`"alice"`), []byte(`"mallory"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	notTrail := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTrail, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--destination", "openai", good}, 0, "Requests     2: 2 sent"},
		{[]string{"--destination", "nowhere", good}, 0, "Requests     0: 0 sent"},
		{[]string{"--destination", "openai", bad}, 1, "the report would not be trustworthy"},
		{[]string{good}, 2, "--destination is required"},
		{[]string{"--destination", "openai", "--format", "yaml", good}, 2, `--format "yaml"`},
		{[]string{"--destination", "openai", "--since", "yesterday", good}, 2, "want RFC 3339"},
		{[]string{"--destination", "openai", "--since", "2026-03-02", "--until", "2026-03-01", good}, 2, "is not before --until"},
		{[]string{"--destination", "openai", "--policy", "no-such-preset", good}, 2, "no-such-preset"},
		{[]string{"--destination", "openai", filepath.Join(dir, "missing.jsonl")}, 2, "no such file"},
		{[]string{"--destination", "openai", notTrail}, 2, "not an audit trail"},
	} {
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"audit", "exposure"}, tc.args...), strings.NewReader(""), &out, &out)
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, tc.code, tc.want, out.String())
		}
	}
}

// FuzzExposure reads arbitrary trail lines. As they stand (mostly a
// broken chain, or no trail at all) exposure exits 1 or 2 and never
// panics; re-chained into a valid trail, it reports, its periods add up
// to its totals, and the fields it does not report (model, provider,
// sources, the tripping exchange's signals) never show in its output
// even when they hold a value. The report's map iterations make coverage
// vary between runs of one input: fuzz with -fuzzminimizetime 1s, or the
// minimization of each new input takes a minute.
func FuzzExposure(f *testing.F) {
	for _, seed := range []string{
		`{"time":"2026-03-02T09:00:00Z","exchange":"a1","destination":"openai","model":"m","tokens":1,"decision":"redact","detectors":{"pii.email":2},"redacted_by":{"pii.email":1},"principal":"alice","verdict":"clean","duration_ms":4,"prev":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"time":"2026-03-02T09:01:00Z","exchange":"a2","destination":"openai","signs":{"dropped_prompt":1},"verdict":"contaminated","duration_ms":2000,"prev":"x"}` + "\n" +
			`{"time":"2026-03-02T09:02:00Z","exchange":"a2","destination":"openai","event":"quarantine.tripped","quarantine":{"since":"2026-03-02T09:02:00Z","reason":"signs","action":"block"},"prev":"x"}` + "\n" +
			`{"time":"2026-03-02T09:03:00Z","exchange":"a3","destination":"openai","quarantined":"openai","verdict":"not_sent","detectors":{"secret.x":1},"prev":"x"}`,
		`{"time":"2026-03-02T09:03:00Z","destination":"backup","quarantined":"openai","verdict":"clean","prev":"x"}` + "\n" +
			`{"time":"2026-03-02T09:04:00Z","destination":"openai","event":"quarantine.cleared","quarantine":{"until":"2026-03-02T09:01:00Z"},"prev":"x"}`,
		"{\"destination\":\"openai\",\"principal\":\"\\u001b[31mred\",\"verdict\":\"clean\",\"prev\":\"x\"}",
		"not json\n\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	pol, err := policies.Preset("default")
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	const value = "4111 1111 1111 1111 jean.dupont@acme-corp.fr"
	f.Fuzz(func(t *testing.T, data []byte) {
		raw := filepath.Join(dir, "raw.jsonl")
		if err := os.WriteFile(raw, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := run(context.Background(), []string{"audit", "exposure", "--destination", "openai", raw}, strings.NewReader(""), &out, &out)
		if code != 0 && code != 1 && code != 2 {
			t.Fatalf("exit %d", code)
		}

		var trail bytes.Buffer
		log := sdk.NewAuditLog(&trail, "")
		for _, line := range bytes.Split(data, []byte("\n")) {
			var r sdk.AuditRecord
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			r.Model, r.Provider, r.Sources = value, value, []string{value}
			r.Signals = map[string]int{value: 1}
			if log.Append(&r) != nil {
				return // not representable as a line (a time out of range)
			}
		}
		b := newExposureBuilder("openai", time.Time{}, time.Time{}, time.Now(), pol)
		if _, err := sdk.VerifyAudit(bytes.NewReader(trail.Bytes()), sdk.AuditVerifyOptions{}, func(_ int, r *sdk.AuditRecord) error {
			b.add(r)
			return nil
		}); err != nil {
			return // an empty trail
		}
		rep := b.report()
		var total, sent int
		for _, p := range rep.Periods {
			total += p.Requests.Total
			sent += p.Requests.Sent
		}
		if total != rep.Requests.Total || sent != rep.Requests.Sent || rep.Requests.Sent+rep.Requests.NotSent != rep.Requests.Total {
			t.Fatalf("periods add up to %d/%d sent, report %+v", total, sent, rep.Requests)
		}
		var text, js bytes.Buffer
		if err := writeExposureText(&text, rep); err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&js).Encode(rep); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{text.String(), js.String()} {
			if strings.Contains(s, "4111") || strings.Contains(s, "acme-corp") {
				t.Fatalf("a value in the report:\n%s", s)
			}
		}
		if strings.ContainsFunc(text.String(), func(r rune) bool { return r < ' ' && r != '\n' || r == 0x7f }) {
			t.Fatalf("a control character in the text report:\n%q", text.String())
		}
	})
}
