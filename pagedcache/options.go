package pagedcache

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Reuse is the order in which free pages are handed out again.
type Reuse string

const (
	// ReuseLIFO hands out the most recently freed page first, as SGLang's
	// paged allocator does (freed pages are put back at the front).
	ReuseLIFO Reuse = "lifo"
	// ReuseLRU hands out the least recently freed page first, as vLLM's free
	// block queue does.
	ReuseLRU Reuse = "lru"
)

// Fault is an opt-in misbehaviour of the engine.
type Fault string

const (
	// FaultOversizeStalePages reproduces the incident: a prompt longer than
	// the scheduler's limit but shorter than the context length is aborted at
	// prefill (usage reports 1 prompt token) yet still decoded, over pages
	// taken from the free list without being written, so the answer is made
	// of earlier requests' tokens; HTTP 200, finish_reason "length".
	FaultOversizeStalePages Fault = "oversize-stale-pages"
	// FaultAbortReuseRace frees an aborted request's pages at once, while its
	// in-flight prefill chunk is still being written: the late write lands in
	// the pages of the next request that takes them.
	FaultAbortReuseRace Fault = "abort-reuse-race"
	// FaultSharedPrefixCache salts the prefix cache globally instead of per
	// tenant, so one tenant's cached pages serve another's prompt
	// (cached_tokens and latency reveal what other tenants sent).
	FaultSharedPrefixCache Fault = "shared-prefix-cache"
	// FaultAutoTruncate silently keeps only the last tokens of an over-long
	// prompt and answers 200.
	FaultAutoTruncate Fault = "auto-truncate"
)

// Faults lists every fault the server knows, in a stable order.
func Faults() []Fault {
	return []Fault{FaultOversizeStalePages, FaultAbortReuseRace, FaultSharedPrefixCache, FaultAutoTruncate}
}

// ParseFault returns the fault named s (case-insensitive).
func ParseFault(s string) (Fault, error) {
	f := Fault(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Faults(), f) {
		return f, nil
	}
	return "", fmt.Errorf("pagedcache: unknown fault %q (known: %s)", s, joinFaults(Faults()))
}

func joinFaults(fs []Fault) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}

// Options configures a Server. The zero value of each field selects the
// default given in its comment.
type Options struct {
	// CapacityTokens is the KV-cache size in token slots (default 65,536).
	// It is rounded down to a whole number of pages.
	CapacityTokens int
	// PageSize is the number of token slots per page (default 16).
	PageSize int
	// ContextLen is the model's context length checked by the front end
	// (default 131,072: larger than the cache, as in the incident).
	ContextLen int
	// Reuse is the free-page reuse order (default ReuseLIFO).
	Reuse Reuse
	// Faults are enabled for every request. Empty means correct behaviour.
	Faults []Fault
	// IgnoreFaultHeader makes the server ignore X-PagedCache-Fault.
	IgnoreFaultHeader bool
	// Seed makes answers reproducible (default 0, itself a valid seed).
	Seed uint64
	// MaxRunning bounds the requests holding pages at once (default 64).
	MaxRunning int
	// MaxWaiting bounds the queue of requests waiting for a slot or pages
	// (default 256); a request arriving at a full queue gets 503.
	MaxWaiting int
	// QueueTimeout bounds the time a request waits in the queue before a 503
	// (default 30s).
	QueueTimeout time.Duration
	// DisablePrefixCache turns prefix sharing off.
	DisablePrefixCache bool
	// ModelName is the served model ID (default "pagedcache-1"). Requests
	// naming any model are served; responses echo the requested name.
	ModelName string
	// DefaultMaxTokens is the answer budget when a request sets none
	// (default 64).
	DefaultMaxTokens int
	// ChunkTokens is the prefill chunk size (default 256).
	ChunkTokens int
	// PrefillTokenDelay, when set, is slept per prompt token not found in the
	// prefix cache, so that latency reflects cache hits as on a real server.
	PrefillTokenDelay time.Duration
	// DecodeTokenDelay, when set, is slept per generated token; requests then
	// hold their pages for a while, as on a real server.
	DecodeTokenDelay time.Duration
	// MaxBodyBytes bounds request bodies (default 64 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// HistorySize is how many request records ground truth keeps (default 65,536).
	HistorySize int
	// APIKeys maps bearer keys to tenant names. A key not listed becomes the
	// tenant "key-" followed by 12 hex digits of its SHA-256; the key itself
	// is never shown or logged.
	APIKeys map[string]string
	// Log, when set, receives one line per request (never prompt text).
	Log io.Writer
}

// ErrOptions reports an invalid option value.
var ErrOptions = errors.New("pagedcache: invalid options")

func (o Options) withDefaults() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.CapacityTokens, 65536)
	def(&o.PageSize, 16)
	def(&o.ContextLen, 131072)
	def(&o.MaxRunning, 64)
	def(&o.MaxWaiting, 256)
	def(&o.DefaultMaxTokens, 64)
	def(&o.ChunkTokens, 256)
	def(&o.HistorySize, 65536)
	if o.QueueTimeout == 0 {
		o.QueueTimeout = 30 * time.Second
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 64 << 20
	}
	if o.ModelName == "" {
		o.ModelName = "pagedcache-1"
	}
	if o.Reuse == "" {
		o.Reuse = ReuseLIFO
	}
	switch {
	case o.PageSize < 1 || o.PageSize > 1<<16:
		return o, fmt.Errorf("%w: page size %d must be in 1..65536", ErrOptions, o.PageSize)
	case o.CapacityTokens < 2*o.PageSize:
		return o, fmt.Errorf("%w: capacity %d tokens must hold at least 2 pages of %d", ErrOptions, o.CapacityTokens, o.PageSize)
	case o.CapacityTokens > 1<<28:
		return o, fmt.Errorf("%w: capacity %d tokens is over the 268,435,456 limit", ErrOptions, o.CapacityTokens)
	case o.ContextLen < 2:
		return o, fmt.Errorf("%w: context length %d must be at least 2", ErrOptions, o.ContextLen)
	case o.MaxRunning < 1 || o.MaxWaiting < 0 || o.DefaultMaxTokens < 1 || o.ChunkTokens < 1 || o.HistorySize < 1:
		return o, fmt.Errorf("%w: MaxRunning, DefaultMaxTokens, ChunkTokens and HistorySize must be positive, MaxWaiting not negative", ErrOptions)
	case o.Reuse != ReuseLIFO && o.Reuse != ReuseLRU:
		return o, fmt.Errorf("%w: reuse %q must be %q or %q", ErrOptions, o.Reuse, ReuseLIFO, ReuseLRU)
	}
	for _, f := range o.Faults {
		if _, err := ParseFault(string(f)); err != nil {
			return o, fmt.Errorf("%w: %w", ErrOptions, err)
		}
	}
	return o, nil
}

// Presets lists the preset names accepted by Preset.
func Presets() []string { return []string{"default", "incident-2026", "vllm"} }

// Preset returns the options of a named preset:
//
//   - "default": correct behaviour, 65,536-token cache, pages of 16, context
//     131,072, LIFO reuse.
//   - "incident-2026": the incident's engine: 681,280-token cache, pages of
//     64, context 1,048,576, LIFO reuse, fault oversize-stale-pages.
//   - "vllm": correct behaviour with vLLM's block size 16 and LRU reuse,
//     65,536-token cache, context 32,768.
func Preset(name string) (Options, error) {
	switch strings.ToLower(name) {
	case "", "default":
		return Options{CapacityTokens: 65536, PageSize: 16, ContextLen: 131072, Reuse: ReuseLIFO}, nil
	case "incident-2026":
		return Options{
			CapacityTokens: 681280,
			PageSize:       64,
			ContextLen:     1048576,
			Reuse:          ReuseLIFO,
			Faults:         []Fault{FaultOversizeStalePages},
		}, nil
	case "vllm":
		return Options{CapacityTokens: 65536, PageSize: 16, ContextLen: 32768, Reuse: ReuseLRU}, nil
	}
	return Options{}, fmt.Errorf("%w: unknown preset %q (known: %s)", ErrOptions, name, strings.Join(Presets(), ", "))
}

// Option changes Options; NewTestServer takes a list of them.
type Option func(*Options) error

// WithOptions replaces all options with o (later Options still apply).
func WithOptions(o Options) Option { return func(p *Options) error { *p = o; return nil } }

// WithPreset replaces all options with the named preset's.
func WithPreset(name string) Option {
	return func(p *Options) error {
		o, err := Preset(name)
		if err != nil {
			return err
		}
		*p = o
		return nil
	}
}

// WithCapacity sets the KV-cache capacity in tokens and the page size.
func WithCapacity(tokens, pageSize int) Option {
	return func(p *Options) error { p.CapacityTokens, p.PageSize = tokens, pageSize; return nil }
}

// WithContextLen sets the context length checked by the front end.
func WithContextLen(n int) Option { return func(p *Options) error { p.ContextLen = n; return nil } }

// WithFaults enables faults for every request.
func WithFaults(f ...Fault) Option {
	return func(p *Options) error { p.Faults = append(p.Faults, f...); return nil }
}

// WithSeed sets the model's seed.
func WithSeed(seed uint64) Option { return func(p *Options) error { p.Seed = seed; return nil } }

// WithReuse sets the free-page reuse order.
func WithReuse(r Reuse) Option { return func(p *Options) error { p.Reuse = r; return nil } }

// WithoutPrefixCache disables prefix sharing.
func WithoutPrefixCache() Option {
	return func(p *Options) error { p.DisablePrefixCache = true; return nil }
}
