package pagedcache

// RequestRecord is the ground truth about one request: what the engine did
// with it and every page its answer read. Records are values; reading one
// never races with the server.
type RequestRecord struct {
	// ID is the response ID ("chatcmpl-pc-17", "cmpl-pc-18", "msg_pc-19").
	ID string `json:"id"`
	// Seq is the request's sequence number, the writer ID used in PageRead.
	Seq uint32 `json:"seq"`
	// Tenant is the tenant the request came from.
	Tenant string `json:"tenant"`
	// Endpoint is "chat", "completion" or "messages".
	Endpoint string `json:"endpoint"`
	// Faults are the faults in force for this request.
	Faults []Fault `json:"faults,omitempty"`
	// Outcome is "completed", "rejected", "aborted", "queue-full",
	// "decoded-after-abort" (FaultOversizeStalePages) or "truncated"
	// (FaultAutoTruncate).
	Outcome string `json:"outcome"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// PromptTokens is the prompt's real token count; ReportedPromptTokens is
	// what usage.prompt_tokens said.
	PromptTokens         int `json:"prompt_tokens"`
	ReportedPromptTokens int `json:"reported_prompt_tokens"`
	// CachedTokens were served from the prefix cache.
	CachedTokens int `json:"cached_tokens"`
	// CompletionTokens is the answer's length in tokens.
	CompletionTokens int    `json:"completion_tokens"`
	FinishReason     string `json:"finish_reason,omitempty"`
	// PageTable lists the pages the request held, in position order.
	PageTable []int `json:"page_table"`
	// Reads lists, in answer order, runs of answer tokens read from one page
	// and written by one request. The spaces and line breaks the model puts
	// between quotes are not read from pages and not listed.
	Reads []PageRead `json:"reads"`
	// LateWritesLanded counts token slots of this request's pages that an
	// aborted request's late write overwrote (FaultAbortReuseRace).
	LateWritesLanded int `json:"late_writes_landed"`
}

// PageRead is a run of answer tokens read from one page, all written by the
// same request.
type PageRead struct {
	Page int `json:"page"`
	// Tenant and Request identify who wrote the tokens read.
	Tenant  string `json:"tenant"`
	Request uint32 `json:"request"`
	// Owner is the sequence number of the request the page was allocated
	// to, and Generation the page's write generation, at the time of reading.
	Owner      uint32 `json:"owner"`
	Generation uint64 `json:"generation"`
	// Shared is true when the page came from the prefix cache.
	Shared bool `json:"shared"`
	Tokens int  `json:"tokens"`
}

// ForeignReads returns the reads of tokens written by another request,
// except prefix-cache pages of the same tenant (a legitimate share: the
// cache verified they hold this request's own prompt tokens).
func (r RequestRecord) ForeignReads() []PageRead {
	var out []PageRead
	for _, rd := range r.Reads {
		if rd.Request == r.Seq || (rd.Shared && rd.Tenant == r.Tenant) {
			continue
		}
		out = append(out, rd)
	}
	return out
}

// ForeignTenants returns the other tenants whose tokens the answer read, in
// first-read order.
func (r RequestRecord) ForeignTenants() []string {
	var out []string
	seen := map[string]bool{r.Tenant: true}
	for _, rd := range r.Reads {
		if !seen[rd.Tenant] {
			seen[rd.Tenant] = true
			out = append(out, rd.Tenant)
		}
	}
	return out
}

// PagesSummary is the occupancy of the cache.
type PagesSummary struct {
	PageSize       int     `json:"page_size"`
	TotalPages     int     `json:"total_pages"`
	FreePages      int     `json:"free_pages"`
	CachedPages    int     `json:"cached_pages"`
	EvictablePages int     `json:"evictable_pages"`
	UsedPages      int     `json:"used_pages"`
	WrittenPages   int     `json:"written_pages"`
	Usage          float64 `json:"usage"`
	Reuse          Reuse   `json:"reuse"`
	Running        int     `json:"running"`
	Waiting        int     `json:"waiting"`
	PendingLate    int     `json:"pending_late_writes"`
	// PagesByTenant counts, per tenant, the pages whose current owner is a
	// request of that tenant (free pages included: they are never scrubbed).
	PagesByTenant map[string]int `json:"pages_by_tenant"`
}

// recordRing keeps the last records by sequence number.
type recordRing struct {
	recs []*RequestRecord
}

func (r *recordRing) put(rec *RequestRecord) { r.recs[int(rec.Seq)%len(r.recs)] = rec }

func (r *recordRing) get(seq uint32) (RequestRecord, bool) {
	rec := r.recs[int(seq)%len(r.recs)]
	if rec == nil || rec.Seq != seq {
		return RequestRecord{}, false
	}
	return *rec, true
}
