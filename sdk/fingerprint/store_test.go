package fingerprint

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
)

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

type storeCase struct {
	name string
	make func(t *testing.T, clk *clock, maxHolders int) Store
}

func storeCases() []storeCase {
	return []storeCase{
		{"memory", func(t *testing.T, clk *clock, maxHolders int) Store {
			return NewMemoryStore(MemoryOptions{Now: clk.now, MaxHolders: maxHolders})
		}},
		{"redis", func(t *testing.T, clk *clock, maxHolders int) Store {
			c := redistest.Client(t)
			s := NewRedisStore(c, RedisOptions{Key: testStoreKey, Namespace: "test-" + t.Name(), MaxHolders: maxHolders, Batch: 3})
			s.now = clk.now
			return s
		}},
	}
}

func TestStores(t *testing.T) {
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := &clock{t: time.Now()}
			s := sc.make(t, clk, 4)

			if err := s.Record(ctx, "ex-a", []uint64{1, 2, 3, 3}, time.Minute); err != nil {
				t.Fatal(err)
			}
			clk.add(time.Millisecond)
			if err := s.Record(ctx, "ex-b", []uint64{3, 4}, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := s.Lookup(ctx, []uint64{1, 3, 4, 99})
			if err != nil {
				t.Fatal(err)
			}
			want := []Holders{
				{Count: 1, Exchanges: []string{"ex-a"}},
				{Count: 2, Exchanges: []string{"ex-b", "ex-a"}},
				{Count: 1, Exchanges: []string{"ex-b"}},
				{Count: 0},
			}
			for i := range want {
				if got[i].Count != want[i].Count || !sameIDs(got[i].Exchanges, want[i].Exchanges) {
					t.Fatalf("lookup[%d] = %+v, want %+v", i, got[i], want[i])
				}
			}

			// Document frequency saturates at MaxHolders; the newest are kept.
			for i := 0; i < 6; i++ {
				clk.add(time.Millisecond)
				if err := s.Record(ctx, fmt.Sprintf("boiler-%d", i), []uint64{7}, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			got, _ = s.Lookup(ctx, []uint64{7})
			if got[0].Count < 4 || len(got[0].Exchanges) != 4 || got[0].Exchanges[0] != "boiler-5" {
				t.Fatalf("boilerplate lookup = %+v", got[0])
			}

			// Re-recording renews the TTL; others expire.
			clk.add(40 * time.Second)
			if err := s.Record(ctx, "ex-a", []uint64{5}, time.Minute); err != nil {
				t.Fatal(err)
			}
			clk.add(30 * time.Second)
			got, _ = s.Lookup(ctx, []uint64{1, 3, 4, 5, 7})
			if got[2].Count != 0 || got[4].Count != 0 {
				t.Fatalf("expired exchanges still found: %+v", got)
			}
			if got[3].Count != 1 || got[3].Exchanges[0] != "ex-a" {
				t.Fatalf("renewed exchange lost: %+v", got[3])
			}
			if err := s.Record(ctx, "ex-c", nil, time.Minute); err != nil {
				t.Fatalf("empty record: %v", err)
			}

			// Each record keeps its own TTL: a short one recorded after a
			// long one expires first (abort marks live 2 minutes among
			// exchanges of 15), and the long one stays.
			if err := s.Record(ctx, "long", []uint64{20}, 10*time.Minute); err != nil {
				t.Fatal(err)
			}
			clk.add(time.Millisecond)
			if err := s.Record(ctx, "short", []uint64{21}, time.Minute); err != nil {
				t.Fatal(err)
			}
			clk.add(2 * time.Minute)
			got, _ = s.Lookup(ctx, []uint64{20, 21})
			if got[0].Count != 1 || got[1].Count != 0 {
				t.Fatalf("after 2 minutes, the 10-minute record found %d times (want 1), the 1-minute one %d times (want 0)", got[0].Count, got[1].Count)
			}
		})
	}
}

func sameIDs(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestMemoryStoreBounds(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(MemoryOptions{MaxExchanges: 3, MaxEntries: 10})
	for i := 0; i < 5; i++ {
		if err := s.Record(ctx, fmt.Sprint("ex-", i), []uint64{uint64(i), 100}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, e := s.Len(); n != 3 || e != 6 {
		t.Fatalf("Len = %d exchanges, %d entries; want 3, 6", n, e)
	}
	got, _ := s.Lookup(ctx, []uint64{0, 4, 100})
	if got[0].Count != 0 || got[1].Count != 1 || got[2].Count != 3 {
		t.Fatalf("lookup after eviction = %+v", got)
	}
	// The entry bound forgets the oldest exchanges too.
	big := make([]uint64, 8)
	for i := range big {
		big[i] = uint64(1000 + i)
	}
	_ = s.Record(ctx, "big", big, time.Hour)
	if n, e := s.Len(); e > 10 || n != 2 {
		t.Fatalf("Len = %d exchanges, %d entries; want within 10 entries", n, e)
	}
	// Over the bound, the exchange closest to expiry goes first, whatever
	// its place in the recording order.
	s = NewMemoryStore(MemoryOptions{MaxExchanges: 2})
	_ = s.Record(ctx, "hour", []uint64{1}, time.Hour)
	_ = s.Record(ctx, "minute", []uint64{2}, time.Minute)
	_ = s.Record(ctx, "day", []uint64{3}, 24*time.Hour)
	if got, _ := s.Lookup(ctx, []uint64{1, 2, 3}); got[0].Count != 1 || got[1].Count != 0 || got[2].Count != 1 {
		t.Fatalf("over the bound, kept %d %d %d of hour, minute, day; want 1 0 1", got[0].Count, got[1].Count, got[2].Count)
	}
}

func TestStoresConcurrent(t *testing.T) {
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			s := sc.make(t, &clock{t: time.Now()}, 8)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 50; i++ {
						id := fmt.Sprintf("g%d-%d", g, i)
						if err := s.Record(ctx, id, []uint64{uint64(g*1000 + i), 42}, time.Minute); err != nil {
							errs <- err
							return
						}
						if _, err := s.Lookup(ctx, []uint64{uint64(g*1000 + i), 42}); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got, _ := s.Lookup(ctx, []uint64{7049})
			if got[0].Count != 1 || got[0].Exchanges[0] != "g7-49" {
				t.Fatalf("lookup = %+v", got[0])
			}
		})
	}
}

func TestRedisKeysHaveTTL(t *testing.T) {
	c := redistest.Client(t)
	ctx := context.Background()
	s := NewRedisStore(c, RedisOptions{Key: testStoreKey, Namespace: "ns1"})
	if err := s.Record(ctx, "ex", []uint64{0xabc}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "ns1:fp:abc" {
		t.Fatalf("keys = %v", keys)
	}
	ttl, err := c.PTTL(ctx, keys[0]).Result()
	if err != nil || ttl <= 0 || ttl > 2*time.Minute {
		t.Fatalf("PTTL = %v, %v", ttl, err)
	}
	// Another namespace does not see it.
	other := NewRedisStore(c, RedisOptions{Key: testStoreKey, Namespace: "ns2"})
	got, _ := other.Lookup(ctx, []uint64{0xabc})
	if got[0].Count != 0 {
		t.Fatalf("namespace leak: %+v", got[0])
	}
	// A dead server gives a typed error.
	dead := NewRedisStore(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), RedisOptions{Key: testStoreKey})
	var re *RedisError
	if _, err := dead.Lookup(ctx, []uint64{1}); err == nil || !asRedisError(err, &re) {
		t.Fatalf("dead server lookup error = %v", err)
	}
}

func asRedisError(err error, target **RedisError) bool {
	e, ok := err.(*RedisError)
	if ok {
		*target = e
	}
	return ok
}

// pipelines counts the pipelines of ZADDs a Redis client executes (not
// those of its connection handshakes).
type pipelines struct{ n int }

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "zadd" {
			p.n++
		}
		return next(ctx, cmds)
	}
}

// TestRedisRecordAll: several holders recorded in one pipeline (one round
// trip per Batch fingerprints in all), as Record would record each.
func TestRedisRecordAll(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	for _, tc := range []struct {
		batch, pipelines int
	}{{0, 1}, {3, 3}} {
		t.Run(fmt.Sprint("batch=", tc.batch), func(t *testing.T) {
			count := &pipelines{}
			c := redis.NewClient(&redis.Options{Addr: c.Options().Addr})
			defer c.Close()
			c.AddHook(count)
			s := NewRedisStore(c, RedisOptions{Key: testStoreKey, Namespace: fmt.Sprint("all-", tc.batch), Batch: tc.batch})
			if err := s.RecordAll(ctx, []string{"ex~q1", "ex~i1"}, [][]uint64{{1, 2, 3, 3}, {3, 4, 5, 6, 7}}, time.Minute); err != nil {
				t.Fatal(err)
			}
			if count.n != tc.pipelines {
				t.Errorf("%d pipelines, want %d", count.n, tc.pipelines)
			}
			got, err := s.Lookup(ctx, []uint64{1, 3, 7, 9})
			if err != nil {
				t.Fatal(err)
			}
			want := []Holders{
				{Count: 1, Exchanges: []string{"ex~q1"}},
				{Count: 2, Exchanges: []string{"ex~q1", "ex~i1"}},
				{Count: 1, Exchanges: []string{"ex~i1"}},
				{Count: 0},
			}
			for i := range want {
				if got[i].Count != want[i].Count || !sameIDs(got[i].Exchanges, want[i].Exchanges) {
					t.Fatalf("lookup[%d] = %+v, want %+v", i, got[i], want[i])
				}
			}
			if err := s.RecordAll(ctx, []string{"ex"}, nil, time.Minute); err == nil {
				t.Error("RecordAll with 1 exchange and 0 lists of hashes: no error")
			}
		})
	}
}

// testStoreKey keys the MAC of the Redis stores of the tests.
var testStoreKey = []byte("aishield-test-store-key-32-bytes")
