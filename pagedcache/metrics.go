package pagedcache

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// serveMetrics writes the Prometheus text exposition format (version 0.0.4)
// by hand, with vLLM's metric names where vLLM has one.
func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	model := `model_name="` + escapeLabel(s.opts.ModelName) + `"`
	metric := func(name, typ, help string, samples ...string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, smp := range samples {
			b.WriteString(smp)
			b.WriteByte('\n')
		}
	}
	sample := func(name, labels string, v float64) string {
		return name + "{" + labels + "} " + strconv.FormatFloat(v, 'g', -1, 64)
	}
	s.mu.Lock()
	p := s.pool
	usage := float64(p.used()) / float64(p.numPages)
	running, waiting := s.running, len(s.waitQ)
	m := s.m
	finished := sortedCounts(m.finished)
	rejected := sortedCounts(m.rejected)
	free, evictable, total, cached, pending := p.free.n, p.evictable, p.numPages, len(p.cache), len(p.pending)
	evictions := p.evictions
	s.mu.Unlock()

	metric("vllm:num_requests_running", "gauge", "Number of requests holding KV-cache pages.",
		sample("vllm:num_requests_running", model, float64(running)))
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting for a slot or pages.",
		sample("vllm:num_requests_waiting", model, float64(waiting)))
	metric("vllm:kv_cache_usage_perc", "gauge", "Fraction of KV-cache pages referenced by requests (1 means 100 percent).",
		sample("vllm:kv_cache_usage_perc", model, usage))
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
		sample("vllm:prompt_tokens_total", model, float64(m.promptTokens)))
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
		sample("vllm:generation_tokens_total", model, float64(m.generationTokens)))
	metric("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
		sample("vllm:prefix_cache_queries_total", model, float64(m.prefixQueries)))
	metric("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
		sample("vllm:prefix_cache_hits_total", model, float64(m.prefixHits)))
	var fin []string
	for _, kv := range finished {
		fin = append(fin, sample("vllm:request_success_total", model+`,finished_reason="`+escapeLabel(kv.k)+`"`, float64(kv.v)))
	}
	metric("vllm:request_success_total", "counter", "Count of successfully answered requests, by finish reason.", fin...)
	var rej []string
	for _, kv := range rejected {
		outcome, code, _ := strings.Cut(kv.k, "/")
		rej = append(rej, sample("pagedcache_requests_rejected_total",
			model+`,outcome="`+escapeLabel(outcome)+`",code="`+escapeLabel(code)+`"`, float64(kv.v)))
	}
	metric("pagedcache_requests_rejected_total", "counter", "Requests answered with an error, by outcome and error code.", rej...)
	metric("pagedcache_pages", "gauge", "KV-cache pages by state.",
		sample("pagedcache_pages", model+`,state="free"`, float64(free)),
		sample("pagedcache_pages", model+`,state="evictable"`, float64(evictable)),
		sample("pagedcache_pages", model+`,state="used"`, float64(total-free-evictable)),
		sample("pagedcache_pages", model+`,state="cached"`, float64(cached)))
	metric("pagedcache_page_evictions_total", "counter", "Cached pages evicted to serve allocations.",
		sample("pagedcache_page_evictions_total", model, float64(evictions)))
	metric("pagedcache_stale_token_reads_total", "counter", "Answer tokens read from slots written by another request (outside a same-tenant prefix hit).",
		sample("pagedcache_stale_token_reads_total", model, float64(m.staleReads)))
	metric("pagedcache_oversize_decoded_total", "counter", "Requests decoded after an aborted prefill (fault oversize-stale-pages).",
		sample("pagedcache_oversize_decoded_total", model, float64(m.oversizeDecoded)))
	metric("pagedcache_aborted_requests_total", "counter", "Requests aborted during prefill.",
		sample("pagedcache_aborted_requests_total", model, float64(m.abortedRequests)))
	metric("pagedcache_late_write_tokens_total", "counter", "Tokens of aborted requests written after their pages were freed (fault abort-reuse-race).",
		sample("pagedcache_late_write_tokens_total", model, float64(m.lateWrites)))
	metric("pagedcache_pending_late_write_pages", "gauge", "Free pages with a late write still to land.",
		sample("pagedcache_pending_late_write_pages", model, float64(pending)))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

type kv struct {
	k string
	v uint64
}

func sortedCounts(m map[string]uint64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return out
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
