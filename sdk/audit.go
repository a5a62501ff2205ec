package sdk

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"
)

// AuditRecord is one line of the audit trail: one exchange. It never holds
// a raw value: counts per detector and signal, masked nothing else.
type AuditRecord struct {
	Time        time.Time `json:"time"`
	Exchange    string    `json:"exchange"`
	Destination string    `json:"destination"`
	Provider    string    `json:"provider,omitempty"`
	Model       string    `json:"model"`
	Kind        string    `json:"kind,omitempty"`
	Tokens      int       `json:"tokens"`
	TokensExact bool      `json:"tokens_exact,omitempty"`
	// Decision is "allow", "redact" or "block".
	Decision     string `json:"decision"`
	Level        string `json:"level,omitempty"`
	OverCapacity bool   `json:"over_capacity,omitempty"`
	// Detectors counts outbound findings per detector ID.
	Detectors map[string]int `json:"detectors,omitempty"`
	Redacted  int            `json:"redacted,omitempty"`
	// Principal is who sent the request, when known.
	Principal string `json:"principal,omitempty"`
	// Verdict is the inbound verdict (see the Verdict constants).
	Verdict Verdict `json:"verdict"`
	// Checks are the inbound checks the response got: the signal IDs the
	// policy does not turn off, or only inbound.foreign_placeholder when
	// verification is off. Absent for a request that was not sent.
	Checks []string `json:"checks,omitempty"`
	// Signals counts inbound signals per ID; Sources lists the exchange IDs
	// foreign material came from.
	Signals  map[string]int `json:"signals,omitempty"`
	Sources  []string       `json:"sources,omitempty"`
	Streamed bool           `json:"streamed,omitempty"`
	Status   int            `json:"status,omitempty"`
	// FailedOpen names the stage where the guard failed and the policy let
	// the exchange through; Failure names the stage of a closed failure.
	FailedOpen Stage `json:"failed_open,omitempty"`
	Failure    Stage `json:"failure,omitempty"`
	DurationMS int64 `json:"duration_ms"`

	// Passthrough: the request held what the guard could not read and the
	// destination's passthrough paths let it through unchecked; a clean
	// verdict is then unverified.
	Passthrough bool `json:"passthrough,omitempty"`

	// Prev is the SHA-256 (hex) of the previous line without its newline;
	// 64 zeros for the first line of a trail.
	Prev string `json:"prev"`
}

// GenesisHash is the Prev of the first line of a trail.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// AuditLog appends hash-chained JSON lines. It is safe for concurrent use.
type AuditLog struct {
	mu   sync.Mutex
	w    io.Writer
	prev string
	err  error
}

// NewAuditLog returns a log writing to w whose first line chains to prev
// ("" means GenesisHash: a new trail).
func NewAuditLog(w io.Writer, prev string) *AuditLog {
	if prev == "" {
		prev = GenesisHash
	}
	return &AuditLog{w: w, prev: prev}
}

// OpenAuditLog opens (creating it if needed) the trail at path for
// appending, continuing the chain of its last line. The caller closes the
// returned file when done.
func OpenAuditLog(path string) (*AuditLog, *os.File, error) {
	prev := GenesisHash
	if data, err := os.ReadFile(path); err == nil {
		data = bytes.TrimRight(data, "\n")
		if len(data) > 0 {
			last := data
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				last = data[i+1:]
			}
			sum := sha256.Sum256(last)
			prev = hex.EncodeToString(sum[:])
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return NewAuditLog(f, prev), f, nil
}

// Append writes rec as the next line, setting rec.Prev. After a write
// error every later Append fails (the chain would have a hole).
func (l *AuditLog) Append(rec *AuditRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	rec.Prev = l.prev
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(line)
	if _, err := l.w.Write(append(line, '\n')); err != nil {
		l.err = fmt.Errorf("audit: %w", err)
		return l.err
	}
	l.prev = hex.EncodeToString(sum[:])
	return nil
}

// Err returns the write error that stopped the log, if any.
func (l *AuditLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Head returns the hash of the last line written (GenesisHash when none).
func (l *AuditLog) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prev
}

// ChainError reports where an audit trail's chain breaks.
type ChainError struct {
	Line int // 1-based
	Msg  string
}

func (e *ChainError) Error() string { return fmt.Sprintf("audit: line %d: %s", e.Line, e.Msg) }

// ReadAudit reads a trail, checking its chain as it goes, and calls fn for
// every record. It returns the number of lines and the hash of the last
// one; a broken chain or a malformed line returns *ChainError. The first
// line may chain to anything when allowContinuation is true (a trail that
// was rotated); otherwise it must chain to GenesisHash.
func ReadAudit(r io.Reader, allowContinuation bool, fn func(line int, rec *AuditRecord) error) (int, string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	prev := ""
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		var rec AuditRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return n, prev, &ChainError{Line: n, Msg: "not an audit record: " + err.Error()}
		}
		switch {
		case n == 1 && !allowContinuation && rec.Prev != GenesisHash:
			return n, prev, &ChainError{Line: n, Msg: "first line does not start a chain (prev is not the genesis hash)"}
		case n > 1 && rec.Prev != prev:
			return n, prev, &ChainError{Line: n, Msg: "prev does not match the SHA-256 of line " + fmt.Sprint(n-1) + " (lines changed, removed or inserted)"}
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		if fn != nil {
			if err := fn(n, &rec); err != nil {
				return n, prev, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return n, prev, &ChainError{Line: n + 1, Msg: err.Error()}
	}
	if prev == "" {
		prev = GenesisHash
	}
	return n, prev, nil
}

// record appends the exchange to the audit trail and hands its record to
// Options.OnRecord, once.
func (g *Guard) record(x *Exchange) {
	x.once.Do(func() {
		if g.audit == nil && g.onRecord == nil {
			return
		}
		rec := &AuditRecord{
			Time: x.start.UTC(), Exchange: x.ID, Destination: x.Destination, Principal: x.Principal, Model: x.Model,
			Kind: x.Kind, Tokens: x.Tokens, TokensExact: x.TokensExact,
			Decision: string(x.Decision.Action), Level: x.Decision.Level,
			OverCapacity: x.Decision.OverCapacity, Redacted: x.Redacted,
			Verdict: x.verdict, Streamed: x.Streamed, Status: x.status,
			DurationMS: g.now().Sub(x.start).Milliseconds(),
		}
		if x.info != nil {
			rec.Provider = x.info.Provider
		}
		if rec.Decision == "" {
			rec.Decision = "block"
		}
		if x.verdict != VerdictNotSent && x.Kind != "text" {
			rec.Checks = g.checks
		}
		if len(x.Findings) > 0 {
			rec.Detectors = x.Findings
		}
		if x.FailedOpen {
			rec.FailedOpen = x.failNote
			if rec.Verdict == "" || rec.Verdict == VerdictClean {
				rec.Verdict = VerdictUnverified
			}
		} else if x.failNote != "" {
			rec.Failure = x.failNote
		}
		if x.Passthrough {
			rec.Passthrough = true
			if rec.Verdict == VerdictClean {
				rec.Verdict = VerdictUnverified
			}
		}
		if len(x.signals) > 0 {
			rec.Signals = map[string]int{}
			seen := map[string]bool{}
			for _, s := range x.signals {
				rec.Signals[s.ID]++
				for _, src := range s.Sources {
					if !seen[src] {
						seen[src] = true
						rec.Sources = append(rec.Sources, src)
					}
				}
			}
			sort.Strings(rec.Sources)
		}
		if g.audit != nil {
			_ = g.audit.Append(rec) // a failed log stops later requests (see Check)
		}
		if g.onRecord != nil {
			g.onRecord(*rec)
		}
	})
}
