package sdk_test

import (
	"bytes"
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
