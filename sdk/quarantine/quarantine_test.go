package quarantine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/quarantine"
)

// clock is a test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)} }

func policy(t *testing.T, section string) *policies.Policy {
	t.Helper()
	src := `name: q
levels: [public, internal, confidential]
classify:
  - detectors: ["pii.*"]
    level: confidential
destinations:
  - name: shared
    base_url: https://llm.example
    max_level: internal
    action: redact
    shared: true
    contract: true
  - name: local
    base_url: http://127.0.0.1:11434
    max_level: confidential
    action: redact
default:
  max_level: public
  action: block
` + section
	p, err := policies.Parse([]byte(src), "yaml", "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stores runs f on a MemoryStore and on a RedisStore of a real server.
func stores(t *testing.T, f func(t *testing.T, newStore func() quarantine.Store)) {
	t.Run("memory", func(t *testing.T) {
		s := quarantine.NewMemoryStore()
		f(t, func() quarantine.Store { return s })
	})
	t.Run("redis", func(t *testing.T) {
		c := redistest.Client(t)
		f(t, func() quarantine.Store { return quarantine.NewRedisStore(c, "t") })
	})
}

func TestStoreThresholdWindow(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() quarantine.Store) {
		ctx := context.Background()
		s := newStore()
		t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		rule := quarantine.Rule{Signs: []string{"dropped_prompt", "foreign_text"}, Threshold: 3, Window: time.Minute}
		obs := func(at time.Duration, ex string, signs ...string) (quarantine.State, bool) {
			t.Helper()
			st, tripped, err := s.Observe(ctx, quarantine.Observation{Destination: "shared", Exchange: ex, Signs: signs, Time: t0.Add(at)}, rule)
			if err != nil {
				t.Fatal(err)
			}
			return st, tripped
		}
		// A sign the rule does not name is kept in health, never counted.
		if _, tr := obs(0, "a", "foreign_entity"); tr {
			t.Fatal("a sign outside the rule tripped it")
		}
		obs(time.Second, "b", "dropped_prompt")
		obs(2*time.Second, "c", "foreign_text")
		// Two within the window; the third comes after the first left it.
		if _, tr := obs(62*time.Second, "d", "dropped_prompt"); tr {
			t.Fatal("tripped with two signs within the window")
		}
		st, tr := obs(63*time.Second, "e", "foreign_text", "dropped_prompt")
		if !tr || st.Exchange != "e" || st.Count < 3 || !st.Since.Equal(t0.Add(63*time.Second)) || !st.Until.IsZero() {
			t.Fatalf("tripped %v state %+v", tr, st)
		}
		if st.Signs["foreign_text"] != 1 || st.Signs["dropped_prompt"] != 1 {
			t.Errorf("signs %v", st.Signs)
		}
		// Once in force, more signs do not trip it again.
		if _, tr := obs(64*time.Second, "f", "dropped_prompt", "foreign_text"); tr {
			t.Error("tripped twice")
		}
		got, ok, err := s.Get(ctx, "shared")
		if err != nil || !ok || !got.Since.Equal(st.Since) {
			t.Fatalf("Get %+v %v %v", got, ok, err)
		}
		hs, err := s.Health(ctx)
		if err != nil || len(hs) != 1 {
			t.Fatalf("health %+v %v", hs, err)
		}
		h := hs[0]
		if h.Signs["dropped_prompt"].Count != 4 || h.Signs["foreign_text"].Count != 3 || h.Signs["foreign_entity"].Count != 1 {
			t.Errorf("counts %+v", h.Signs)
		}
		if !h.Signs["dropped_prompt"].First.Equal(t0.Add(time.Second)) || !h.Signs["dropped_prompt"].Last.Equal(t0.Add(64*time.Second)) {
			t.Errorf("first/last %+v", h.Signs["dropped_prompt"])
		}
		if h.State == nil || !h.State.Since.Equal(st.Since) {
			t.Errorf("health state %+v", h.State)
		}
		// Clear compares the trip time: a stale clear does nothing.
		if _, ok, _ := s.Clear(ctx, "shared", st.Since.Add(time.Second)); ok {
			t.Error("cleared another quarantine than the one named")
		}
		if _, ok, _ := s.Clear(ctx, "shared", st.Since); !ok {
			t.Error("not cleared")
		}
		if _, ok, _ := s.Get(ctx, "shared"); ok {
			t.Error("still there after Clear")
		}
		// The window restarts from zero after a clear.
		if _, tr := obs(65*time.Second, "g", "dropped_prompt"); tr {
			t.Error("tripped again by the signs before the clear")
		}
	})
}

func TestStoreExpiry(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() quarantine.Store) {
		ctx := context.Background()
		s := newStore()
		t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		rule := quarantine.Rule{Signs: []string{"foreign_canary"}, Threshold: 1, Window: time.Hour, Duration: 10 * time.Minute}
		st, tr, err := s.Observe(ctx, quarantine.Observation{Destination: "d", Exchange: "x", Signs: []string{"foreign_canary"}, Time: t0}, rule)
		if err != nil || !tr || !st.Until.Equal(t0.Add(10*time.Minute)) {
			t.Fatalf("%+v %v %v", st, tr, err)
		}
		if !st.Active(t0.Add(9*time.Minute)) || st.Active(t0.Add(10*time.Minute)) {
			t.Error("Active disagrees with Until")
		}
		// After it ran out, a new sign trips a new one.
		st2, tr, err := s.Observe(ctx, quarantine.Observation{Destination: "d", Exchange: "y", Signs: []string{"foreign_canary"}, Time: t0.Add(11 * time.Minute)}, rule)
		if err != nil || !tr || st2.Exchange != "y" {
			t.Fatalf("%+v %v %v", st2, tr, err)
		}
	})
}

// Two stores on one Redis server, as two proxies: signs seen at once trip
// the quarantine once, and both see it.
func TestRedisSharedTripsOnce(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Start(t)
	var stores []quarantine.Store
	for range 4 {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		stores = append(stores, quarantine.NewRedisStore(c, "shared"))
	}
	rule := quarantine.Rule{Signs: []string{"foreign_text"}, Threshold: 5, Window: time.Minute}
	var trips atomic.Int32
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, tr, err := stores[i%4].Observe(ctx, quarantine.Observation{Destination: "shared", Exchange: "x", Signs: []string{"foreign_text"},
				Time: t0.Add(time.Duration(i) * time.Millisecond)}, rule)
			if err != nil {
				t.Error(err)
			}
			if tr {
				trips.Add(1)
			}
		}()
	}
	wg.Wait()
	if trips.Load() != 1 {
		t.Fatalf("%d trips, want 1", trips.Load())
	}
	for i, s := range stores {
		if _, ok, err := s.Get(ctx, "shared"); !ok || err != nil {
			t.Errorf("store %d does not see it: %v", i, err)
		}
	}
	// A restart: a new store (process) on the same server sees it.
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if _, ok, _ := quarantine.NewRedisStore(c, "shared").Get(ctx, "shared"); !ok {
		t.Error("a new process does not see the quarantine")
	}
	// Another namespace does not.
	if _, ok, _ := quarantine.NewRedisStore(c, "other").Get(ctx, "shared"); ok {
		t.Error("another namespace sees it")
	}
}

func TestClaimProbe(t *testing.T) {
	stores(t, func(t *testing.T, newStore func() quarantine.Store) {
		ctx := context.Background()
		s := newStore()
		ok1, err1 := s.ClaimProbe(ctx, "d", 300*time.Millisecond)
		ok2, err2 := s.ClaimProbe(ctx, "d", 300*time.Millisecond)
		if err1 != nil || err2 != nil || !ok1 || ok2 {
			t.Fatalf("claims %v %v (%v %v): want one", ok1, ok2, err1, err2)
		}
		time.Sleep(400 * time.Millisecond)
		if ok, _ := s.ClaimProbe(ctx, "d", time.Second); !ok {
			t.Error("no claim after the interval")
		}
	})
}

// hook is a webhook receiver that fails its first fails posts.
type hook struct {
	mu     sync.Mutex
	fails  int
	calls  int
	events []quarantine.Event
	bodies []string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls <= h.fails {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var ev quarantine.Event
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &ev) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.events = append(h.events, ev)
	h.bodies = append(h.bodies, string(body))
}

// The monitor reports each change once, to OnEvent and (changes it made)
// to the webhook, retried with backoff; a second monitor on the same store
// learns them.
func TestMonitorEventsAndWebhook(t *testing.T) {
	ctx := context.Background()
	h := &hook{fails: 2}
	srv := httptest.NewServer(h)
	defer srv.Close()
	p := policy(t, "quarantine:\n  threshold: 2\n  window: 10m\n  duration: 30m\n  webhook: "+srv.URL+"\n")
	c := redistest.Client(t)
	clk := newClock()
	var mu sync.Mutex
	var seen [2][]quarantine.Event
	mon := func(i int) *quarantine.Monitor {
		m, err := quarantine.New(quarantine.Options{Policy: p, Store: quarantine.NewRedisStore(c, "m"), Now: clk.now,
			WebhookBackoff: 10 * time.Millisecond, Client: srv.Client(),
			OnEvent: func(ev quarantine.Event) { mu.Lock(); seen[i] = append(seen[i], ev); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := mon(0), mon(1)
	if err := a.Observe(ctx, "shared", "ex1", []string{policies.SignForeignText}); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.Check(ctx, "shared"); st.Quarantined {
		t.Fatal("quarantined below the threshold")
	}
	clk.add(time.Minute)
	if err := b.Observe(ctx, "shared", "ex2", []string{policies.SignDroppedPrompt}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*quarantine.Monitor{a, b} {
		st, err := m.Check(ctx, "shared")
		if err != nil || !st.Quarantined || st.State.Exchange != "ex2" || st.Quarantine.Action != policies.QuarantineLimit {
			t.Fatalf("status %+v %v", st, err)
		}
	}
	// The duration runs out: the first monitor to look clears it.
	clk.add(31 * time.Minute)
	if st, _ := a.Check(ctx, "shared"); st.Quarantined {
		t.Fatal("still quarantined after its duration")
	}
	if st, _ := b.Check(ctx, "shared"); st.Quarantined {
		t.Fatal("still quarantined for the other monitor")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	describe := func(evs []quarantine.Event) string {
		var s []string
		for _, e := range evs {
			s = append(s, e.Type+"/"+e.Reason)
		}
		return strings.Join(s, " ")
	}
	if got := describe(seen[0]); got != "quarantine.tripped/observed quarantine.cleared/expired" {
		t.Errorf("monitor a: %s", got)
	}
	if got := describe(seen[1]); got != "quarantine.tripped/signs quarantine.cleared/observed" {
		t.Errorf("monitor b: %s", got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Two changes, each posted once by the monitor that made it (two
	// processes: their posts are not ordered between them), after two
	// refused attempts.
	slices.SortFunc(h.events, func(a, b quarantine.Event) int { return strings.Compare(b.Type, a.Type) })
	if got := describe(h.events); got != "quarantine.tripped/signs quarantine.cleared/expired" {
		t.Errorf("webhook received %s (%d calls)", got, h.calls)
	}
	if h.calls != 4 {
		t.Errorf("%d webhook calls, want 4 (2 refused, 2 accepted)", h.calls)
	}
	for _, b := range h.bodies {
		if !strings.Contains(b, `"destination":"shared"`) || !strings.Contains(b, `"policy":"q"`) {
			t.Errorf("event %s", b)
		}
	}
}

// Redis down while quarantined: the monitor keeps the destination
// quarantined and says why; a destination it knew healthy fails closed
// with an error; once Redis is back both recover.
func TestMonitorStoreUnreachable(t *testing.T) {
	ctx := context.Background()
	relay := redistest.NewRelay(t, redistest.Start(t))
	c := redis.NewClient(&redis.Options{Addr: relay.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	m, err := quarantine.New(quarantine.Options{Policy: policy(t, ""), Store: quarantine.NewRedisStore(c, "u")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Observe(ctx, "shared", "x", []string{policies.SignForeignCanary}); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Check(ctx, "shared"); !st.Quarantined {
		t.Fatal("not quarantined")
	}
	relay.Cut()
	st, err := m.Check(ctx, "shared")
	if err != nil || !st.Quarantined || st.Unreachable == nil {
		t.Fatalf("with Redis down: %+v %v, want quarantined and unreachable", st, err)
	}
	qe := &quarantine.Error{Destination: "shared", Since: st.State.Since, Unreachable: st.Unreachable}
	if !strings.Contains(qe.Error(), "cannot be read") {
		t.Errorf("error does not say why: %v", qe)
	}
	if _, err := m.Check(ctx, "local"); err == nil {
		t.Error("a destination not known quarantined passed with the store down")
	}
	// Signs seen while the store is down quarantine in this process.
	if err := m.Observe(ctx, "local", "y", []string{policies.SignDroppedPrompt}); err == nil {
		t.Error("Observe with the store down returned no error")
	}
	if st, _ := m.Check(ctx, "local"); !st.Quarantined {
		t.Error("a sign seen with the store down did not quarantine in this process")
	}
	relay.Restore(t)
	var ok bool
	for range 50 {
		if st, err = m.Check(ctx, "shared"); err == nil && st.Unreachable == nil {
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok || !st.Quarantined {
		t.Fatalf("after Redis came back: %+v %v", st, err)
	}
	if _, ok, _ := m.Clear(ctx, "shared"); !ok {
		t.Error("not cleared")
	}
	if st, err := m.Check(ctx, "shared"); err != nil || st.Quarantined {
		t.Errorf("after clear: %+v %v", st, err)
	}
}

// One monitor's posts arrive in the order of its changes, even while the
// first is being retried.
func TestWebhookOrder(t *testing.T) {
	ctx := context.Background()
	h := &hook{fails: 3}
	srv := httptest.NewServer(h)
	defer srv.Close()
	m, err := quarantine.New(quarantine.Options{Policy: policy(t, "quarantine:\n  webhook: "+srv.URL+"\n"),
		WebhookBackoff: 5 * time.Millisecond, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := m.Observe(ctx, "shared", "x", []string{policies.SignTemplateFragment}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := m.Clear(ctx, "shared"); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for _, e := range h.events {
		got = append(got, e.Type)
	}
	want := strings.Repeat("quarantine.tripped quarantine.cleared ", 3)
	if strings.Join(got, " ")+" " != want {
		t.Errorf("posted %v", got)
	}
}
