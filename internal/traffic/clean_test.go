package traffic

import (
	"reflect"
	"testing"
)

// TestCleanMix: the mix is reproducible, holds every kind, and each kind
// has the shape its name promises.
func TestCleanMix(t *testing.T) {
	a := CleanMix(CleanOptions{Seed: 3, Exchanges: 2000})
	b := CleanMix(CleanOptions{Seed: 3, Exchanges: 2000})
	if !reflect.DeepEqual(a, b) || len(a) != 2000 {
		t.Fatalf("not reproducible or wrong size (%d)", len(a))
	}
	kinds := map[string]int{}
	principals := map[string]bool{}
	for i, x := range a {
		kinds[x.Kind]++
		principals[x.Principal] = true
		if x.N != i || x.User == "" || x.Principal == "" {
			t.Fatalf("exchange %d: %+v", i, x)
		}
	}
	for _, k := range []string{KindRetry, KindRegenerate, KindTemplate, KindFAQ, KindParaphrase, KindSystemPrompt, KindRAG, KindConversation, KindCached} {
		if kinds[k] < 50 {
			t.Errorf("kind %s: %d exchanges", k, kinds[k])
		}
	}
	if len(principals) < 20 {
		t.Errorf("%d principals", len(principals))
	}
	// A retry repeats its request exactly; a regeneration changes only the seed.
	for i := 1; i < len(a); i++ {
		p, x := a[i-1], a[i]
		if x.Kind == KindRetry && p.Kind == KindRetry && p.Conversation == x.Conversation && (p.User != x.User || p.Principal != x.Principal) {
			t.Errorf("retry %d differs from its request", i)
		}
		if x.Kind == KindRegenerate && p.Kind == KindRegenerate && p.Conversation == x.Conversation && (p.User != x.User || *p.Seed == *x.Seed) {
			t.Errorf("regeneration %d", i)
		}
	}
	if len(GoDocuments()) < 5 {
		t.Errorf("only %d documents from GOROOT", len(GoDocuments()))
	}
}
