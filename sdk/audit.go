package sdk

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
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

	// RedactedBy counts the findings redacted, per detector: of what
	// Detectors counts, a sent request carried the rest in clear.
	RedactedBy map[string]int `json:"redacted_by,omitempty"`
	// Signs counts the signs of a faulty service the answer showed (see
	// package quarantine), which fed its destination's health.
	Signs map[string]int `json:"signs,omitempty"`
	// Quarantined names the quarantined destination whose quarantine
	// decided the exchange: refused, let through at its level, or sent to
	// its failover (Destination).
	Quarantined string `json:"quarantined,omitempty"`

	// Event is set on a record that is not an exchange's: the type of a
	// quarantine change (quarantine.EventTripped, EventCleared), which
	// Quarantine describes; Exchange is then the exchange that tripped it
	// and Destination the destination.
	Event      string            `json:"event,omitempty"`
	Quarantine *QuarantineRecord `json:"quarantine,omitempty"`

	// Prev is the chain hash (hex) of the previous line without its
	// newline: its SHA-256, or its HMAC-SHA256 under the trail's key when
	// Chain is set; 64 zeros for the first line of a trail.
	Prev string `json:"prev"`
	// Chain is "hmac-sha256:" and the key ID (AuditKeyID) on the lines of
	// a keyed trail, absent on a plain SHA-256 trail.
	Chain string `json:"chain,omitempty"`
}

// QuarantineRecord describes a quarantine change in the audit trail.
type QuarantineRecord struct {
	// Since is when it tripped; Until when it ends by itself (absent:
	// until cleared).
	Since time.Time `json:"since"`
	Until time.Time `json:"until,omitzero"`
	// Action is what it does to requests: block, limit or failover.
	Action string `json:"action,omitempty"`
	// Reason is how it changed: "signs", "expired", "cleared",
	// "observed" (by another process sharing the store).
	Reason string `json:"reason"`
	// Count is how many counting signs the window held when it tripped.
	Count int `json:"count,omitempty"`
}

// GenesisHash is the Prev of the first line of a trail.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// chainPrefix starts the Chain field of a keyed trail's lines; the key ID
// follows.
const chainPrefix = "hmac-sha256:"

// AuditHead is the signed head of a keyed trail: a line that AuditLog.Seal
// and AuditLog.Close write, stating how many exchange records the file
// holds up to it and the chain hash of the line before it, under an
// HMAC-SHA256 of the trail's key. A keyed trail that ends with a valid head
// has lost no line at its end; one re-chained without the key has no valid
// head, nor any valid link.
type AuditHead struct {
	// Type is always "head"; exchange records have no type.
	Type string `json:"type"`
	// Time is when the head was written (UTC).
	Time time.Time `json:"time"`
	// Records counts the exchange records of the file before the head.
	Records int `json:"records"`
	// Chain is "hmac-sha256:" and the key ID, as on every keyed line.
	Chain string `json:"chain"`
	// Prev is the chain hash of the line before, as in AuditRecord.
	Prev string `json:"prev"`
	// MAC is the HMAC-SHA256 (hex) of Prev, Records and Time under the
	// trail's key.
	MAC string `json:"mac"`
}

// chainer computes a trail's link hashes: SHA-256 without a key,
// HMAC-SHA256 with one.
type chainer struct {
	key   []byte
	chain string // chainPrefix + key ID; "" without a key
}

func newChainer(key []byte) chainer {
	if len(key) == 0 {
		return chainer{}
	}
	key = bytes.Clone(key)
	return chainer{key: key, chain: chainPrefix + AuditKeyID(key)}
}

// AuditKeyID names a trail key without revealing it: the first 8 bytes
// (hex) of an HMAC-SHA256 of a fixed label under the key. It is written on
// every line of a keyed trail so that a wrong key is told apart from a
// tampered line.
func AuditKeyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("aishield audit key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

func (c chainer) sum(line []byte) string {
	if c.key == nil {
		s := sha256.Sum256(line)
		return hex.EncodeToString(s[:])
	}
	m := hmac.New(sha256.New, c.key)
	m.Write(line)
	return hex.EncodeToString(m.Sum(nil))
}

func (c chainer) headMAC(prev string, records int, t time.Time) string {
	m := hmac.New(sha256.New, c.key)
	fmt.Fprintf(m, "aishield audit head\n%s\n%d\n%s", prev, records, t.UTC().Format(time.RFC3339Nano))
	return hex.EncodeToString(m.Sum(nil))
}

// name is what a message calls the link hash.
func (c chainer) name() string {
	if c.key == nil {
		return "SHA-256"
	}
	return "HMAC-SHA256"
}

// AuditOption configures an AuditLog.
type AuditOption func(*auditConfig)

type auditConfig struct {
	key []byte
	now func() time.Time
}

// WithAuditKey keys the trail's chain: each line carries the HMAC-SHA256
// of the line before under key instead of its SHA-256, and Seal and Close
// write a signed head, so that nobody without the key can rewrite or
// re-chain the trail, nor cut lines off its end, unseen. Nil or empty
// keeps the plain SHA-256 chain, which shows accidental damage only. The
// key is copied; keep it secret, and give the same one to VerifyAudit.
func WithAuditKey(key []byte) AuditOption {
	return func(c *auditConfig) { c.key = key }
}

// WithAuditClock sets the clock of signed heads; nil means time.Now.
func WithAuditClock(now func() time.Time) AuditOption {
	return func(c *auditConfig) { c.now = now }
}

func newAuditConfig(opts []AuditOption) auditConfig {
	var c auditConfig
	for _, o := range opts {
		o(&c)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// ErrAuditClosed is returned by Append after Close.
var ErrAuditClosed = errors.New("audit: the log is closed")

// AuditLog appends hash-chained JSON lines. It is safe for concurrent use.
type AuditLog struct {
	mu      sync.Mutex
	w       io.Writer
	prev    string
	records int // exchange records in the file so far
	chain   chainer
	now     func() time.Time
	sealed  bool // the last line written is a head
	closed  bool
	err     error
}

// NewAuditLog returns a log writing to w whose first line chains to prev
// ("" means GenesisHash: a new trail). w is taken to be at the start of
// its file: the record counts of signed heads start at zero.
func NewAuditLog(w io.Writer, prev string, opts ...AuditOption) *AuditLog {
	if prev == "" {
		prev = GenesisHash
	}
	c := newAuditConfig(opts)
	return &AuditLog{w: w, prev: prev, chain: newChainer(c.key), now: c.now}
}

// OpenAuditLog opens (creating it 0600 if needed) the trail at path for
// appending, continuing the chain of its last line. path must be a regular
// file (symlinks are followed); a FIFO, a device or a directory is refused. A keyed log
// (WithAuditKey) continues only a trail keyed with the same key, or starts
// a new file; a log without a key refuses a keyed trail. The caller closes
// the log (Close writes the signed head of a keyed trail), then the file.
func OpenAuditLog(path string, opts ...AuditOption) (*AuditLog, *os.File, error) {
	c := newAuditConfig(opts)
	ch := newChainer(c.key)
	// O_NONBLOCK: opening a FIFO put at path must not wait for a writer;
	// it is refused below like any file that is not regular (a device, a
	// socket), whose reads could block or never end.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("audit: %s is not a regular file (mode %v)", path, st.Mode().Type())
		}
		return nil, nil, err
	}
	last, records, err := auditTail(f)
	if err == nil && last != nil {
		err = continuable(path, last, ch)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	l := &AuditLog{w: f, prev: GenesisHash, records: records, chain: ch, now: c.now}
	if last != nil {
		l.prev = ch.sum(last)
		l.sealed = isHeadLine(last)
	}
	return l, f, nil
}

// auditTail reads a trail from its start and returns its last non-blank
// line (nil when there is none) and the number of exchange records.
func auditTail(r io.Reader) ([]byte, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAuditLine)
	var last []byte
	records := 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !isHeadLine(line) {
			records++
		}
		last = append(last[:0], line...)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("audit: reading the trail: %w", err)
	}
	return last, records, nil
}

// continuable checks that a log chaining with ch may append after last.
func continuable(path string, last []byte, ch chainer) error {
	var probe struct {
		Chain string `json:"chain"`
	}
	if err := json.Unmarshal(last, &probe); err != nil {
		if ch.key == nil {
			return nil // a plain chain links whatever the line holds
		}
		return fmt.Errorf("audit: %s: the last line is not an audit record", path)
	}
	switch {
	case probe.Chain == ch.chain:
		return nil
	case ch.key == nil:
		return fmt.Errorf("audit: %s is a keyed trail (%s): open it with its key", path, probe.Chain)
	case probe.Chain == "":
		return fmt.Errorf("audit: %s holds a plain SHA-256 chain; a keyed chain starts a new file (move this one aside)", path)
	}
	return fmt.Errorf("audit: %s is keyed with another key (%s, this key is %s)", path, probe.Chain, ch.chain)
}

// isHeadLine reports whether a line is a signed head, as this package
// writes them (the type comes first).
func isHeadLine(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"type":"head"`)) }

// Append writes rec as the next line, setting rec.Prev (and rec.Chain on a
// keyed trail). After a write error every later Append fails (the chain
// would have a hole), and so does any Append after Close.
func (l *AuditLog) Append(rec *AuditRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.closed {
		return ErrAuditClosed
	}
	rec.Prev = l.prev
	rec.Chain = l.chain.chain
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := l.writeLine(line); err != nil {
		return err
	}
	l.records++
	l.sealed = false
	return nil
}

// writeLine writes one line and advances the chain; l.mu is held.
func (l *AuditLog) writeLine(line []byte) error {
	if _, err := l.w.Write(append(line, '\n')); err != nil {
		l.err = fmt.Errorf("audit: %w", err)
		return l.err
	}
	l.prev = l.chain.sum(line)
	return nil
}

// Seal writes a signed head (AuditHead) after the last line of a keyed
// trail, unless the last line is one already; without a key it does
// nothing. A writer that rotates its file seals the old one before moving
// on; Close seals too.
func (l *AuditLog) Seal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seal()
}

func (l *AuditLog) seal() error {
	if l.err != nil {
		return l.err
	}
	if l.chain.key == nil || l.sealed || l.closed {
		return nil
	}
	h := AuditHead{Type: "head", Time: l.now().UTC(), Records: l.records, Chain: l.chain.chain, Prev: l.prev}
	h.MAC = l.chain.headMAC(h.Prev, h.Records, h.Time)
	line, err := json.Marshal(&h)
	if err != nil {
		return err
	}
	if err := l.writeLine(line); err != nil {
		return err
	}
	l.sealed = true
	return nil
}

// Close seals a keyed trail (Seal) and stops the log: later Appends fail
// with ErrAuditClosed. It does not close the writer, which belongs to the
// caller. Closing twice is harmless.
func (l *AuditLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.seal()
	l.closed = true
	return err
}

// Err returns the write error that stopped the log, if any.
func (l *AuditLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Head returns the chain hash of the last line written (GenesisHash when
// none).
func (l *AuditLog) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prev
}

// ChainError reports where an audit trail's chain breaks: the trail was
// changed (or, for a keyed trail, the key is not the one it was written
// with; Msg says which).
type ChainError struct {
	Line int // 1-based
	Msg  string
}

func (e *ChainError) Error() string { return fmt.Sprintf("audit: line %d: %s", e.Line, e.Msg) }

// ErrNotAuditTrail is wrapped by the error of VerifyAudit and ReadAudit
// when the input is not an audit trail at all: no line of it is an audit
// record.
var ErrNotAuditTrail = errors.New("not an audit trail")

// AuditKeyError is returned when a keyed trail is read without a key: its
// links cannot be checked.
type AuditKeyError struct {
	// KeyID names the trail's key (see AuditKeyID).
	KeyID string
}

func (e *AuditKeyError) Error() string {
	return fmt.Sprintf("audit: the trail is keyed (HMAC-SHA256, key id %s): its key is needed to verify it", e.KeyID)
}

// maxAuditLine bounds one line of a trail.
const maxAuditLine = 16 << 20

// AuditVerifyOptions configures VerifyAudit.
type AuditVerifyOptions struct {
	// Key is the trail's key (WithAuditKey). With a key, every line must
	// be keyed with it and the trail must end with a signed head; without
	// one, a keyed trail fails with *AuditKeyError.
	Key []byte
	// Continuation accepts a first line that chains to an earlier
	// (rotated) file instead of GenesisHash.
	Continuation bool
	// Open accepts a keyed trail whose last lines are not followed by a
	// signed head: one still being written (or whose writer stopped
	// without Close). Those records could have been cut off unseen;
	// AuditSummary.Unsealed counts them.
	Open bool
}

// AuditSummary is what VerifyAudit read.
type AuditSummary struct {
	// Lines is the number of the last non-blank line read.
	Lines int
	// Records counts exchange records, Heads signed heads.
	Records, Heads int
	// Head is the chain hash of the last line (GenesisHash when none).
	Head string
	// KeyID names the key of a keyed trail; "" for plain SHA-256.
	KeyID string
	// LastHead is the last signed head and LastHeadLine its line; nil and
	// 0 when there is none.
	LastHead     *AuditHead
	LastHeadLine int
	// Unsealed counts the records after the last signed head of a keyed
	// trail.
	Unsealed int
}

// ReadAudit reads a plain (SHA-256) trail, checking its chain as it goes,
// and calls fn for every record. It returns the number of lines and the
// hash of the last one; see VerifyAudit for the errors. The first line may
// chain to anything when allowContinuation is true (a trail that was
// rotated); otherwise it must chain to GenesisHash.
func ReadAudit(r io.Reader, allowContinuation bool, fn func(line int, rec *AuditRecord) error) (int, string, error) {
	s, err := VerifyAudit(r, AuditVerifyOptions{Continuation: allowContinuation}, fn)
	return s.Lines, s.Head, err
}

// VerifyAudit reads a trail, checking every link as it goes, and calls fn
// for every exchange record (not for heads). Blank lines at the end are
// ignored; a blank line before another line breaks the trail. Errors:
// *ChainError when the trail was changed (a line edited, removed,
// inserted, re-chained, a head missing at the end of a keyed trail, a
// wrong key), an error wrapping ErrNotAuditTrail when no line is an audit
// record, *AuditKeyError for a keyed trail read without a key, or fn's
// error. The summary is valid up to the error.
func VerifyAudit(r io.Reader, opts AuditVerifyOptions, fn func(line int, rec *AuditRecord) error) (*AuditSummary, error) {
	sum := &AuditSummary{Head: GenesisHash}
	ch := newChainer(opts.Key)
	sum.KeyID = strings.TrimPrefix(ch.chain, chainPrefix)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAuditLine)
	prev := ""
	n, blank := 0, 0
	lastIsHead := false
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			if blank == 0 {
				blank = n
			}
			continue
		}
		if blank != 0 {
			return sum, &ChainError{Line: blank, Msg: "blank line inside the trail (lines removed or inserted)"}
		}
		sum.Lines = n
		rec, head, err := decodeAuditLine(line)
		if err != nil {
			if n == 1 && !laterRecord(sc) {
				return sum, fmt.Errorf("audit: line 1 is not an audit record (%v): %w", err, ErrNotAuditTrail)
			}
			return sum, &ChainError{Line: n, Msg: "not an audit record: " + err.Error()}
		}
		chain, linkPrev := "", ""
		if head != nil {
			chain, linkPrev = head.Chain, head.Prev
		} else {
			chain, linkPrev = rec.Chain, rec.Prev
		}
		switch {
		case chain == "" && ch.key != nil:
			return sum, &ChainError{Line: n, Msg: "a plain SHA-256 line in a trail verified with a key: the trail was re-chained or written without the key"}
		case chain != "" && ch.key == nil:
			if !strings.HasPrefix(chain, chainPrefix) {
				return sum, &ChainError{Line: n, Msg: fmt.Sprintf("unknown chain %q", chain)}
			}
			return sum, &AuditKeyError{KeyID: strings.TrimPrefix(chain, chainPrefix)}
		case chain != ch.chain:
			return sum, &ChainError{Line: n, Msg: fmt.Sprintf("keyed with another key (%s; the key given is %s): a wrong key, or a line written by another writer", chain, ch.chain)}
		}
		switch {
		case prev == "" && !opts.Continuation && linkPrev != GenesisHash:
			return sum, &ChainError{Line: n, Msg: "first line does not start a chain (prev is not the genesis hash)"}
		case prev != "" && linkPrev != prev:
			return sum, &ChainError{Line: n, Msg: fmt.Sprintf("prev does not match the %s of line %d (lines changed, removed or inserted)", ch.name(), n-1)}
		}
		if head != nil {
			if ch.headMAC(head.Prev, head.Records, head.Time) != head.MAC {
				return sum, &ChainError{Line: n, Msg: "the signed head's MAC does not match (the head was changed)"}
			}
			if head.Records != sum.Records {
				return sum, &ChainError{Line: n, Msg: fmt.Sprintf("the signed head counts %d records, the trail holds %d before it", head.Records, sum.Records)}
			}
			sum.Heads++
			sum.LastHead, sum.LastHeadLine, sum.Unsealed = head, n, 0
		} else {
			sum.Records++
			sum.Unsealed++
		}
		lastIsHead = head != nil
		prev = ch.sum(line)
		sum.Head = prev
		if rec != nil && fn != nil {
			if err := fn(n, rec); err != nil {
				return sum, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if n == 0 {
			return sum, fmt.Errorf("audit: line 1 is not an audit record (%v): %w", err, ErrNotAuditTrail)
		}
		return sum, &ChainError{Line: n + 1, Msg: err.Error()}
	}
	if ch.key == nil {
		sum.Unsealed = 0
	} else if sum.Lines > 0 && !lastIsHead && !opts.Open {
		return sum, &ChainError{Line: sum.Lines, Msg: fmt.Sprintf("the trail does not end with a signed head: %d record(s) at its end are not covered "+
			"(lines cut off the end, or a writer that did not close: accept a trail still being written explicitly)", sum.Unsealed)}
	}
	return sum, nil
}

// decodeAuditLine decodes a line as a signed head or an exchange record,
// strictly: unknown fields are refused.
func decodeAuditLine(line []byte) (*AuditRecord, *AuditHead, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if isHeadLine(line) {
		var h AuditHead
		if err := dec.Decode(&h); err != nil {
			return nil, nil, err
		}
		if dec.More() {
			return nil, nil, errors.New("data after the head")
		}
		return nil, &h, nil
	}
	var rec AuditRecord
	if err := dec.Decode(&rec); err != nil {
		return nil, nil, err
	}
	if dec.More() {
		return nil, nil, errors.New("data after the record")
	}
	if rec.Prev == "" {
		return nil, nil, errors.New("no prev")
	}
	return &rec, nil, nil
}

// laterRecord reports whether any line left in sc is an audit record or
// head: a first line that is not one is then damage to a trail, not
// another kind of file.
func laterRecord(sc *bufio.Scanner) bool {
	for sc.Scan() {
		if _, _, err := decodeAuditLine(sc.Bytes()); err == nil {
			return true
		}
	}
	return false
}

// record appends the exchange to the audit trail and hands its record to
// Options.OnRecord, once.
func (g *Guard) record(x *Exchange) {
	x.once.Do(func() {
		var signs []string
		if !x.replay {
			signs = signsOf(x.signals)
			// Filed once the record is written: a quarantine this answer
			// trips is recorded after it.
			defer g.observe(x, signs)
		}
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
		rec.RedactedBy, rec.Quarantined = x.redactedBy, x.Quarantined
		if len(signs) > 0 {
			rec.Signs = make(map[string]int, len(signs))
			for _, s := range signs {
				rec.Signs[s] = 1
			}
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
