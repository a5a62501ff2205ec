package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/verify"
)

// redisStore is a fingerprint store on its own connection to the Redis
// server at addr, as a separate proxy process would have.
func redisStore(t testing.TB, addr, namespace string) fingerprint.Store {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: namespace})
}

// crossOnly isolates the cross-exchange memory: no canary (a canary of
// another proxy is foreign to any proxy, shared memory or not), and the
// usage check only flags (the over-capacity answer below reports 1 prompt
// token, which blocks it by itself in a real policy; here it must not hide
// what the shared memory adds).
const crossOnly = `inbound:
  signals:
    foreign_entity: block
    cross_exchange: block
    template_fragment: block
    usage_mismatch: flag
    canary: "off"
  canary: false
`

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exchanges returns the exchange IDs of an audit trail.
func exchanges(t testing.TB, audit string) []string {
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(audit), "\n") {
		var rec struct{ Exchange string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		ids = append(ids, rec.Exchange)
	}
	return ids
}

// TestProxiesShareMemoryThroughRedis: two proxies (two processes of one
// deployment, here two proxy.New in process) in front of the same
// paged-cache server with the incident's fault. Tenant A's report goes out
// through proxy 1; tenant B's over-capacity prompt goes out through proxy 2
// and is decoded over A's freed pages, so B's answer quotes A's text. With
// one Redis store shared by both, proxy 2 refuses it as
// inbound.cross_exchange naming proxy 1's exchange; with two separate
// in-memory stores, proxy 2 has never seen A's text and cannot know: the
// same answer goes through. That difference is what --redis is for.
func TestProxiesShareMemoryThroughRedis(t *testing.T) {
	addr := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		stream bool
		shared bool
	}{
		{"redis", false, true},
		{"redis-stream", true, true},
		{"separate-memory", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192),
				pagedcache.WithSeed(11), pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
			pol := testPolicyInbound(t, ts.URL, 8192, crossOnly)
			var s1, s2 fingerprint.Store // nil: each proxy's own memory
			if tc.shared {
				s1, s2 = redisStore(t, addr, tc.name), redisStore(t, addr, tc.name)
			}
			key, canaryKey := []byte("deployment hash key"), []byte("deployment canary key")
			var audit1 syncBuffer
			_, p1 := startProxy(t, Options{Policy: pol, Key: key, CanaryKey: canaryKey, Store: s1, AuditLog: sdk.NewAuditLog(&audit1, "")})
			_, p2 := startProxy(t, Options{Policy: pol, Key: key, CanaryKey: canaryKey, Store: s2})
			ctx := context.Background()

			report := rareText(7, 900)
			if _, err := ask(ctx, client(p1.URL, "alice"), report, 32, false); err != nil {
				t.Fatalf("A through proxy 1: %v", err)
			}
			ids := exchanges(t, audit1.String())
			if len(ids) != 1 {
				t.Fatalf("proxy 1 audit: %v", ids)
			}
			// B's prompt is over the scheduler's limit (4,095 tokens) and
			// under the context the policy declares: it goes out.
			text, err := ask(ctx, client(p2.URL, "bob"), "Summarise these public reviews.\n\n"+prose(5, 3200), 400, tc.stream)

			rec := record(t, ts, 2)
			if rec.Outcome != "decoded-after-abort" || len(rec.ForeignTenants()) == 0 {
				t.Fatalf("ground truth: B's answer did not read A's pages: %s, foreign tenants %v", rec.Outcome, rec.ForeignTenants())
			}
			if !tc.shared {
				if err != nil {
					t.Fatalf("separate memories: proxy 2 refused the answer (%v); it should have had no way to know", err)
				}
				if n := longestShared(text, report); n < verify.DefaultMinSpan {
					t.Fatalf("the delivered answer shares only %d bytes in a row with A's report, under the signal's %d-byte span", n, verify.DefaultMinSpan)
				}
				t.Logf("separate memories: proxy 2 delivered an answer sharing %d bytes in a row with A's report (ground truth: read pages of %v)",
					longestShared(text, report), rec.ForeignTenants())
				return
			}
			if err == nil {
				t.Fatalf("shared memory: proxy 2 delivered A's text: %.120q", text)
			}
			if !strings.Contains(err.Error(), "inbound.cross_exchange") || !strings.Contains(err.Error(), ids[0]) {
				t.Fatalf("shared memory: refused, but not as cross-exchange material from proxy 1's exchange %s: %v", ids[0], err)
			}
			if n := longestShared(text, report); n >= verify.DefaultMinSpan {
				t.Errorf("%d bytes in a row of A's report reached B before the refusal: %.120q", n, text)
			}
		})
	}
}

// rareText is n words of seeded text over a vocabulary of uncommon words,
// so that any quote of it is informative to the cross-exchange signal.
func rareText(seed uint64, n int) string {
	words := strings.Fields(`basalt cormorant dolomite ferrule gimbal halyard isobar jetsam kestrel lanyard
		marlinspike nacelle obsidian pelorus quoin ratline sextant tholepin umiak vernier windlass xebec
		yardarm zeolite anemometer bathymetry cleat davit escutcheon fathometer gunwale hawsepipe
		inclinometer jackstay keelson lazarette mizzen nautilus orlop pintle quadrant rudderpost
		scupper taffrail undertow viaduct wheelhouse bollard capstan dunnage eyebolt fairlead grommet`)
	r := rand.New(rand.NewPCG(seed, 17))
	out := make([]string, n)
	for i := range out {
		out[i] = words[r.IntN(len(words))]
		if i%11 == 10 {
			out[i] += "."
		}
	}
	return strings.Join(out, " ")
}

// longestShared returns the length of the longest run of bytes of s found
// in ref.
func longestShared(s, ref string) int {
	best := 0
	for i := range s {
		lo, hi := best+1, len(s)-i
		for lo <= hi { // binary search: runs in ref are prefix-closed
			mid := (lo + hi) / 2
			if strings.Contains(ref, s[i:i+mid]) {
				best, lo = mid, mid+1
			} else {
				hi = mid - 1
			}
		}
	}
	return best
}

// testStoreKey keys the MAC of the Redis stores of the tests.
var testStoreKey = []byte("aishield-test-store-key-32-bytes")
