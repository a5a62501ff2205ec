package sdk

import (
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// TestRedactOverlap: findings that overlap (a custom rule over a built-in,
// a value found both as written and decoded) are redacted as one span, so
// no byte of the later one is left in clear, and restoring gives the text
// back.
func TestRedactOverlap(t *testing.T) {
	g := &Guard{policy: &policies.Policy{}}
	text := "ticket ACME-4411 jean.dupont@acme-corp.fr end"
	at := func(s string) (int, int) { i := strings.Index(text, s); return i, i + len(s) }
	s1, e1 := at("ACME-4411 jean")
	s2, e2 := at("jean.dupont@acme-corp.fr")
	fs := []classifiers.Finding{
		{Detector: "pii.email", Start: s2, End: e2},
		{Detector: "custom.ticket", Start: s1, End: e1},
	}
	v := newVault([]byte("0123456789abcdef0123456789abcdef"))
	out, n := g.redact(v, text, fs)
	if n != 1 {
		t.Errorf("%d placeholders, want 1 for one span", n)
	}
	for _, frag := range []string{"ACME", "4411", "jean", "dupont", "acme-corp"} {
		if strings.Contains(out, frag) {
			t.Fatalf("%q left in clear in %q", frag, out)
		}
	}
	if !strings.HasPrefix(out, "ticket ") || !strings.HasSuffix(out, " end") {
		t.Fatalf("text around the span changed: %q", out)
	}
	if got, _ := v.RestoreString(out); got != text {
		t.Fatalf("restored %q, want %q", got, text)
	}
}
