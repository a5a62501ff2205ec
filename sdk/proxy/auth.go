package proxy

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
)

// CallerKeyHeader is the request header in which a caller presents its
// proxy key (see CallerKeys). "Proxy-Authorization: Bearer KEY" is
// accepted too. Both are removed before forwarding.
const CallerKeyHeader = "X-Aishield-Key"

// MinCallerKey is the shortest caller key accepted in clear in a keys
// file: shorter secrets are guessable.
const MinCallerKey = 16

// maxCallerKey bounds a presented or listed key.
const maxCallerKey = 1024

// CallerKeys is the set of keys that authenticate callers of the proxy
// (Options.CallerKeys). Only their SHA-256 digests are kept. The zero
// value (and nil) holds no key. Safe for concurrent use once built.
type CallerKeys struct {
	digests [][sha256.Size]byte
}

// CallerKeysError reports a line of a caller keys file that is not a key.
// It names the line, never its content.
type CallerKeysError struct {
	Line int
	Msg  string
}

func (e *CallerKeysError) Error() string {
	return fmt.Sprintf("caller keys: line %d: %s", e.Line, e.Msg)
}

// ParseCallerKeys reads a caller keys file: one key per line, either the
// key itself (at least MinCallerKey printable ASCII characters without
// spaces) or "sha256:" and the 64 hex digits of its SHA-256 digest, so
// that the file need not hold the secrets. Blank lines and lines starting
// with "#" are ignored. A file with no key is an error: it would let no
// caller in, or be taken for no authentication at all.
func ParseCallerKeys(r io.Reader) (*CallerKeys, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	k := &CallerKeys{}
	seen := map[[sha256.Size]byte]bool{}
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var d [sha256.Size]byte
		if hexd, ok := strings.CutPrefix(line, "sha256:"); ok {
			b, err := hex.DecodeString(hexd)
			if err != nil || len(b) != sha256.Size {
				return nil, &CallerKeysError{Line: n, Msg: "a hashed key is sha256: and 64 hex digits"}
			}
			copy(d[:], b)
		} else {
			if msg := checkKey(line); msg != "" {
				return nil, &CallerKeysError{Line: n, Msg: msg}
			}
			d = sha256.Sum256([]byte(line))
		}
		if !seen[d] {
			seen[d] = true
			k.digests = append(k.digests, d)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &CallerKeysError{Line: n + 1, Msg: "line too long"}
		}
		return nil, fmt.Errorf("caller keys: %w", err)
	}
	if len(k.digests) == 0 {
		return nil, errors.New("caller keys: no key in the file")
	}
	return k, nil
}

// checkKey tells what is wrong with a key in clear, "" when nothing.
func checkKey(key string) string {
	if len(key) < MinCallerKey {
		return fmt.Sprintf("a key must be at least %d characters (or given as sha256:HEX)", MinCallerKey)
	}
	if len(key) > maxCallerKey {
		return fmt.Sprintf("a key must be at most %d characters", maxCallerKey)
	}
	for _, c := range key {
		if c > unicode.MaxASCII || !unicode.IsPrint(c) || c == ' ' {
			return "a key is printable ASCII without spaces"
		}
	}
	return ""
}

// Len returns the number of distinct keys.
func (k *CallerKeys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.digests)
}

// match reports whether key is one of k's, comparing its digest with
// every listed digest in constant time (the time does not depend on which
// key matched, nor on how much of one did).
func (k *CallerKeys) match(key string) bool {
	if k == nil || key == "" || len(key) > maxCallerKey {
		return false
	}
	d := sha256.Sum256([]byte(key))
	found := 0
	for i := range k.digests {
		found |= subtle.ConstantTimeCompare(d[:], k.digests[i][:])
	}
	return found == 1
}

// presentedKey returns the caller key r presents: the CallerKeyHeader
// value, else the token of "Proxy-Authorization: Bearer".
func presentedKey(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get(CallerKeyHeader)); v != "" {
		return v
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Proxy-Authorization")), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok)
	}
	return ""
}
