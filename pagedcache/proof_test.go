package pagedcache

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCorrectModeNeverReadsForeignPages runs thousands of requests from 12
// tenants concurrently through a small cache (so pages are reused, evicted
// and shared by prefix all the time), mixed with over-long prompts and
// aborted prefills, and checks the ground truth of every answer: no token
// read was written by another request, except same-tenant prefix-cache pages.
func TestCorrectModeNeverReadsForeignPages(t *testing.T) {
	t.Parallel()
	const tenants, perTenant, workers = 12, 120, 16
	for _, reuse := range []Reuse{ReuseLIFO, ReuseLRU} {
		t.Run(string(reuse), func(t *testing.T) {
			ts := NewTestServer(t, WithCapacity(4096, 16), WithContextLen(8192), WithReuse(reuse), WithSeed(11),
				func(o *Options) error { o.MaxRunning = 6; o.MaxWaiting = 1024; return nil })
			type item struct{ tenant, i int }
			work := make(chan item)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var problems []string
			counts := map[string]int{}
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for it := range work {
						tenant := fmt.Sprintf("tenant-%02d", it.tenant)
						marker := fmt.Sprintf("MARK%02dX", it.tenant)
						var prompt string
						var hdr []string
						kind := "ok"
						switch it.i % 10 {
						case 0: // shared system prefix within the tenant: prefix hits
							prompt = strings.Repeat(marker+" policy text. ", 20) + fmt.Sprint(it.i)
						case 7: // too long for the cache: must be refused
							prompt = strings.Repeat(" "+marker, 2100)
							kind = "long"
						case 9: // client gone during prefill
							prompt = strings.Repeat(marker+" draft. ", 80)
							hdr = []string{HeaderAbort, "prefill"}
							kind = "abort"
						default:
							prompt = fmt.Sprintf("%s request %d: %s", marker, it.i, strings.Repeat(marker+" data ", it.i%17+1))
						}
						code, r := chat(t, ts.Client(), ts.URL, tenant, prompt, 24+it.i%40, hdr...)
						rec, ok := ts.Request(r.ID)
						mu.Lock()
						counts[kind+fmt.Sprint(code)]++
						switch {
						case !ok:
							problems = append(problems, "no record for "+r.ID)
						case kind == "long" && code != 400:
							problems = append(problems, fmt.Sprintf("%s: long prompt got %d", r.ID, code))
						case kind != "long" && code != 200:
							problems = append(problems, fmt.Sprintf("%s: status %d", r.ID, code))
						case len(rec.ForeignReads()) > 0 || len(rec.ForeignTenants()) > 0:
							problems = append(problems, fmt.Sprintf("%s read foreign pages: %+v", r.ID, rec.ForeignReads()))
						case code == 200:
							for other := range tenants {
								if other != it.tenant && strings.Contains(r.Choices[0].Message.Content, fmt.Sprintf("MARK%02dX", other)) {
									problems = append(problems, r.ID+" quotes another tenant")
								}
							}
						}
						mu.Unlock()
					}
				}()
			}
			for i := range perTenant {
				for tn := range tenants {
					work <- item{tn, i}
				}
			}
			close(work)
			wg.Wait()
			for _, p := range problems[:min(len(problems), 10)] {
				t.Error(p)
			}
			sum := ts.Pages()
			if sum.Running != 0 || sum.Waiting != 0 || sum.UsedPages != 0 || sum.PendingLate != 0 {
				t.Errorf("after the run: %+v", sum)
			}
			if counts["ok200"] < tenants*perTenant/2 || counts["long400"] == 0 || counts["abort200"] == 0 {
				t.Errorf("request mix = %v", counts)
			}
			t.Logf("%d requests: %v; pages %+v", tenants*perTenant, counts, sum)
		})
	}
}
