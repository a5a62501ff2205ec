package sdk_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/sdk"
)

func TestAuditChain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	// Two sessions append to the same file: the second continues the chain.
	for i := 0; i < 2; i++ {
		l, f, err := sdk.OpenAuditLog(path)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if err := l.Append(&sdk.AuditRecord{Time: time.Unix(int64(i*10+j), 0).UTC(), Exchange: "x", Destination: "d", Model: "m", Tokens: j, Decision: "allow", Verdict: "clean"}); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	data, _ := os.ReadFile(path)
	n, head, err := sdk.ReadAudit(bytes.NewReader(data), false, nil)
	if err != nil || n != 6 || len(head) != 64 {
		t.Fatalf("n=%d head=%q err=%v", n, head, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	tests := []struct {
		name     string
		lines    []string
		cont     bool
		wantLine int
	}{
		{"edited value", replace(lines, 2, strings.Replace(lines[2], `"tokens":2`, `"tokens":9`, 1)), false, 4},
		{"removed line", append(append([]string{}, lines[:3]...), lines[4:]...), false, 4},
		{"swapped lines", swap(lines, 1, 2), false, 2},
		{"cut first line", lines[1:], false, 1},
		{"cut first line, continuation allowed", lines[1:], true, 0},
		{"not a record", replace(lines, 0, `{"hello":1}`), false, 1},
		{"garbage", replace(lines, 5, "\x00\xff"), false, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := sdk.ReadAudit(strings.NewReader(strings.Join(tt.lines, "\n")+"\n"), tt.cont, nil)
			var ce *sdk.ChainError
			if tt.wantLine == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &ce) || ce.Line != tt.wantLine {
				t.Fatalf("err = %v, want a *ChainError at line %d", err, tt.wantLine)
			}
		})
	}
}

func replace(lines []string, i int, s string) []string {
	out := append([]string{}, lines...)
	out[i] = s
	return out
}

func swap(lines []string, i, j int) []string {
	out := append([]string{}, lines...)
	out[i], out[j] = out[j], out[i]
	return out
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestAuditFailureStopsRequests: once the audit trail cannot be written,
// the guard refuses to send (an unaudited exchange would be a hole).
func TestAuditFailureStopsRequests(t *testing.T) {
	g := newGuard(t, sdk.Options{Audit: failingWriter{}})
	if _, err := g.Check(t.Context(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody(secret)}); err == nil {
		t.Fatal("blocked request not refused")
	}
	_, err := g.Check(t.Context(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("hello")})
	var ge *sdk.GuardError
	if !errors.As(err, &ge) || ge.Stage != "audit" {
		t.Fatalf("err = %v, want *GuardError at audit", err)
	}
}

// keyedTrail writes a keyed trail of two sessions of three records each
// (each session closed, so sealed by a head) and returns its lines.
func keyedTrail(t *testing.T, key []byte) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	clock := func() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }
	for i := 0; i < 2; i++ {
		l, f, err := sdk.OpenAuditLog(path, sdk.WithAuditKey(key), sdk.WithAuditClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if err := l.Append(&sdk.AuditRecord{Time: time.Unix(int64(i*10+j), 0).UTC(), Exchange: "x", Destination: "d", Model: "m", Tokens: j, Decision: "allow", Verdict: "clean"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(&sdk.AuditRecord{}); !errors.Is(err, sdk.ErrAuditClosed) {
			t.Fatalf("append after close: %v", err)
		}
		f.Close()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// rechain rewrites lines as a plain SHA-256 chain, dropping heads: what a
// writer without the key can do to a trail after editing it.
func rechain(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	prev := sdk.GenesisHash
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"head"`) {
			continue
		}
		var rec sdk.AuditRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		rec.Chain, rec.Prev = "", prev
		b, err := json.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		prev = hex.EncodeToString(sum[:])
		out = append(out, string(b))
	}
	return out
}

// TestHardening17KeyedAudit: a keyed trail (HMAC-SHA256 links, a signed
// head on Close) verifies with its key; every change a writer without the
// key can make is a *ChainError naming the line: an edited record, the
// whole file re-chained with plain SHA-256 (which an unkeyed check cannot
// see), a dropped head, a truncated last line, a wrong key.
func TestHardening17KeyedAudit(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	_, lines := keyedTrail(t, key)
	if len(lines) != 8 || !strings.HasPrefix(lines[3], `{"type":"head"`) || !strings.HasPrefix(lines[7], `{"type":"head"`) {
		t.Fatalf("want 3 records, a head, 3 records, a head; got %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	s, err := sdk.VerifyAudit(strings.NewReader(join(lines)), sdk.AuditVerifyOptions{Key: key}, nil)
	if err != nil || s.Records != 6 || s.Heads != 2 || s.LastHeadLine != 8 || s.LastHead.Records != 6 || s.Unsealed != 0 || s.KeyID != sdk.AuditKeyID(key) {
		t.Fatalf("intact keyed trail: %+v, %v", s, err)
	}
	// Trailing blank lines are the end of the file, not a change.
	if _, err := sdk.VerifyAudit(strings.NewReader(join(lines)+"\n \n"), sdk.AuditVerifyOptions{Key: key}, nil); err != nil {
		t.Errorf("trailing blank lines: %v", err)
	}

	plain := rechain(t, replace(lines, 1, strings.Replace(lines[1], `"tokens":1`, `"tokens":9`, 1)))
	if _, _, err := sdk.ReadAudit(strings.NewReader(join(plain)), false, nil); err != nil {
		t.Fatalf("the re-chained trail should pass an unkeyed check (that is the attack): %v", err)
	}
	tests := []struct {
		name     string
		text     string
		key      []byte
		open     bool
		wantLine int
		wantMsg  string
	}{
		{"edited record", join(replace(lines, 1, strings.Replace(lines[1], `"tokens":1`, `"tokens":9`, 1))), key, false, 3, "prev does not match the HMAC-SHA256 of line 2"},
		{"re-chained with plain SHA-256", join(plain), key, false, 1, "re-chained"},
		{"dropped last head", join(lines[:7]), key, false, 7, "does not end with a signed head"},
		{"dropped last head and records", join(lines[:5]), key, false, 5, "does not end with a signed head"},
		{"truncated last line", join(lines)[:len(join(lines))-20], key, false, 8, "not an audit record"},
		{"edited head", join(replace(lines, 7, strings.Replace(lines[7], `"records":6`, `"records":5`, 1))), key, false, 8, "MAC does not match"},
		{"wrong key", join(lines), []byte("another key of 32 bytes, wrong!!"), false, 1, "keyed with another key"},
		{"blank line inside", join(append(append(append([]string{}, lines[:2]...), ""), lines[2:]...)), key, false, 3, "blank line inside"},
		{"blank line inside, unkeyed", join(append([]string{plain[0], ""}, plain[1:]...)), nil, false, 2, "blank line inside"},
		{"open trail accepted when asked", join(lines[:5]), key, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sdk.VerifyAudit(strings.NewReader(tt.text), sdk.AuditVerifyOptions{Key: tt.key, Open: tt.open}, nil)
			if tt.wantLine == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *sdk.ChainError
			if !errors.As(err, &ce) || ce.Line != tt.wantLine || !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Fatalf("err = %v, want a *ChainError at line %d saying %q", err, tt.wantLine, tt.wantMsg)
			}
		})
	}

	// Without the key a keyed trail cannot be checked: a typed error, not
	// "broken"; neither is a file that holds no audit record.
	var ke *sdk.AuditKeyError
	if _, _, err := sdk.ReadAudit(strings.NewReader(join(lines)), false, nil); !errors.As(err, &ke) || ke.KeyID != sdk.AuditKeyID(key) {
		t.Errorf("keyed trail read without a key: %v, want *AuditKeyError", err)
	}
	for _, text := range []string{"hello\nworld\n", `{"hello":1}` + "\n", "\x00\x01\x02"} {
		if _, _, err := sdk.ReadAudit(strings.NewReader(text), false, nil); !errors.Is(err, sdk.ErrNotAuditTrail) {
			t.Errorf("%q: %v, want ErrNotAuditTrail", text, err)
		}
	}
}

// TestHardening17OpenAuditLogKeys: a keyed log continues only a trail
// keyed with the same key; it refuses to append to a plain trail or to one
// keyed otherwise, and a log without a key refuses a keyed trail, so that
// no file ever mixes chains.
func TestHardening17OpenAuditLogKeys(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	keyed, _ := keyedTrail(t, key)
	plainPath := filepath.Join(t.TempDir(), "plain.jsonl")
	l, f, err := sdk.OpenAuditLog(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(&sdk.AuditRecord{Exchange: "x", Decision: "allow", Verdict: "clean"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // no head without a key
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		name, path string
		key        []byte
		want       string
	}{
		{"keyed log on a plain trail", plainPath, key, "plain SHA-256 chain"},
		{"plain log on a keyed trail", keyed, nil, "open it with its key"},
		{"another key", keyed, []byte("another key of 32 bytes, wrong!!"), "another key"},
	} {
		if _, _, err := sdk.OpenAuditLog(tc.path, sdk.WithAuditKey(tc.key)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	data, _ := os.ReadFile(plainPath)
	if n, _, err := sdk.ReadAudit(bytes.NewReader(data), false, nil); err != nil || n != 1 {
		t.Errorf("plain trail: %d lines, %v", n, err)
	}
}

// TestHardening17GuardSealsOnClose: a guard given AuditKey writes a keyed
// trail and seals it with a signed head when it is closed.
func TestHardening17GuardSealsOnClose(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var trail bytes.Buffer
	g := newGuard(t, sdk.Options{Audit: &trail, AuditKey: key})
	for _, text := range []string{"hello", "mail jean.dupont@acme-corp.fr"} {
		x, err := g.Check(t.Context(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody(text)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.Response(t.Context(), 200, "application/json", []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sdk.VerifyAudit(bytes.NewReader(trail.Bytes()), sdk.AuditVerifyOptions{Key: key}, nil); err == nil {
		t.Fatal("an open trail verified as sealed")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := sdk.VerifyAudit(bytes.NewReader(trail.Bytes()), sdk.AuditVerifyOptions{Key: key}, nil)
	if err != nil || s.Records != 2 || s.Heads != 1 {
		t.Fatalf("sealed trail: %+v, %v", s, err)
	}
}

// FuzzVerifyAudit: malformed trails never panic, and every error is one of
// the documented kinds.
func FuzzVerifyAudit(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var trail bytes.Buffer
	l := sdk.NewAuditLog(&trail, "", sdk.WithAuditKey(key))
	for i := 0; i < 2; i++ {
		_ = l.Append(&sdk.AuditRecord{Exchange: "x", Decision: "allow", Verdict: "clean", Tokens: i})
	}
	_ = l.Close()
	f.Add(trail.Bytes(), true)
	f.Add(trail.Bytes(), false)
	f.Add([]byte(`{"prev":"`+sdk.GenesisHash+`"}`+"\n\n"), false)
	f.Add([]byte(`{"type":"head","records":0}`), true)
	f.Fuzz(func(t *testing.T, data []byte, keyed bool) {
		opts := sdk.AuditVerifyOptions{}
		if keyed {
			opts.Key = key
		}
		s, err := sdk.VerifyAudit(bytes.NewReader(data), opts, nil)
		if s == nil {
			t.Fatal("nil summary")
		}
		var ce *sdk.ChainError
		var ke *sdk.AuditKeyError
		if err != nil && !errors.As(err, &ce) && !errors.As(err, &ke) && !errors.Is(err, sdk.ErrNotAuditTrail) {
			t.Fatalf("undocumented error %T: %v", err, err)
		}
	})
}
