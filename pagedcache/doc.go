// Package pagedcache is a local inference server speaking OpenAI's API and
// Anthropic's Messages API whose answers really come out of a paged KV
// cache, built to reproduce the 2026 incident in which a shared inference
// service decoded over-long requests over stale memory pages and returned
// other customers' data with HTTP 200.
//
// # Memory model
//
// The cache holds CapacityTokens token slots split into pages of PageSize
// slots, numbered 1..N (page 0 is reserved, as in SGLang's allocator). Each
// slot holds a token ID of the cl100k_base BPE vocabulary and remembers which
// request (and tenant) wrote it last; each page remembers its owner and a
// write generation. Pages are never scrubbed when freed. Free pages are reused
// LIFO by default (the most recently freed page first, like the engine of the
// incident) or least recently freed first ([ReuseLRU], like vLLM's free block
// queue). Full prompt pages are registered in a prefix cache under a chained
// hash salted with the tenant (like vLLM's cache_salt), so only requests of the
// same tenant share them; unreferenced cached pages are evicted in LRU order
// when the free list runs dry. Each running request holds a page table and
// one of MaxRunning slots; requests that do not fit wait in a bounded queue,
// and a full queue answers 503.
//
// # The model
//
// The "model" is deterministic: it writes the prompt into the pages of its
// page table, then produces its answer by quoting its context, read back
// token by token from those pages, at positions chosen by a PRNG seeded with
// Options.Seed, the request's seed parameter (absent: 0) and the prompt: the
// same request gets the same answer, and a regenerate (another seed)
// another one. Like a real model it quotes whole words: a
// quote of 3 to 12 tokens (extended to the end of its last word) starts at
// the start of the word holding the PRNG's pick (or the next one) and ends
// where a word ends; words are separated by ASCII whitespace, so an e-mail
// address, a "[[...]]" placeholder or a canary token is quoted whole or not
// at all. A quote never runs into the next line, never starts with a line's
// first word when it ends in ':' (the role headers "user:", "system:",
// "assistant:" of the rendered chat; the quote starts after it), and never
// crosses from one writer's text to another's (stale pages of different
// requests, a late write in the middle of a page, a prompt and its answer).
// Quotes are joined by a space or line break token when neither side has
// whitespace. An answer ends at a word end within a target of 12 to 64
// tokens (finish_reason "stop"), or where max_tokens cuts it ("length", which
// an answer decoded over stale pages always reports, as in the incident); a
// context with no word the model can reach gets an empty answer. Whatever
// the pages hold is what the answer says, and every read is recorded:
// [Server.Request] (or GET /debug/requests/{id}) returns, for a response ID,
// every page the answer read with the tenant and request that wrote it.
//
// # Two APIs, one engine
//
// /v1/chat/completions and /v1/completions speak OpenAI's API, /v1/messages
// Anthropic's Messages API (anthropic-version header, x-api-key, message
// JSON or the SSE events message_start, content_block_start, ping,
// content_block_delta, content_block_stop, message_delta and message_stop,
// errors as {"type":"error","error":{...}}). Both reduce a request to the
// same rendered prompt ("role: text" lines, then "assistant:") and are
// answered by the same engine, pages, tenants and faults; stop sequences
// (OpenAI's stop, Anthropic's stop_sequences) end an answer before the
// first one it would hold. /healthz (and /health) answers "ok".
//
// # Correct behaviour and faults
//
// By default the server behaves: a prompt at or over the context length is
// refused by the front end, and a prompt over the scheduler's limit
// min(ContextLen-1, CapacityTokens-1) is refused too, both with HTTP 400 and
// OpenAI's context_length_exceeded error (Anthropic's invalid_request_error
// "prompt is too long" on /v1/messages). Faults are opt-in, for the whole
// server (Options.Faults) or per request (the X-PagedCache-Fault header):
// [FaultOversizeStalePages] (the incident), [FaultAbortReuseRace],
// [FaultSharedPrefixCache] and [FaultAutoTruncate].
//
// # Concurrency
//
// A [Server] is safe for concurrent use by multiple goroutines; one mutex
// guards the memory, held for short critical sections (tokenization, JSON and
// hashing run outside it).
package pagedcache
