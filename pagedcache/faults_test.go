package pagedcache

import (
	"math"
	"strings"
	"testing"
)

// victimText is dense with one marker, so any quote of it shows it.
func victimText(i int) string {
	return strings.Repeat("Customer ZEPHYR-4471 owes 98,000 EUR under contract "+string(rune('A'+i))+". ", 12)
}

// incidentScenario: a victim tenant sends a few requests, then a second
// tenant sends a prompt over the scheduler's limit but under the context
// length. It returns the second tenant's answer and its ground truth.
func incidentScenario(t *testing.T, seed uint64, faults ...Fault) (int, chatReply, RequestRecord) {
	t.Helper()
	ts := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithSeed(seed), WithFaults(faults...))
	for i := range 3 {
		if code, r := chat(t, ts.Client(), ts.URL, "victim", victimText(i), 32); code != 200 {
			t.Fatalf("victim request %d: %d %+v", i, code, r.Error)
		}
	}
	long := strings.Repeat(" lorem", 3000) // 3,000 tokens + template: over 2,047, under 8,192
	code, r := chat(t, ts.Client(), ts.URL, "mallory", long, 64)
	rec, ok := ts.Request(r.ID)
	if !ok && code == 200 {
		t.Fatalf("no ground truth for %q", r.ID)
	}
	return code, r, rec
}

func TestOversizeStalePages(t *testing.T) {
	t.Parallel()
	code, r, rec := incidentScenario(t, 7, FaultOversizeStalePages)
	if code != 200 {
		t.Fatalf("status %d, want 200 (the incident answered 200)", code)
	}
	ch := r.Choices[0]
	if ch.FinishReason != "length" || r.Usage.PromptTokens != 1 || r.Usage.CompletionTokens != 64 {
		t.Errorf("finish %q prompt_tokens %d completion %d; want length, 1, 64", ch.FinishReason, r.Usage.PromptTokens, r.Usage.CompletionTokens)
	}
	if !strings.Contains(ch.Message.Content, "ZEPHYR") {
		t.Errorf("answer %q does not carry the victim's data", ch.Message.Content)
	}
	if got := rec.ForeignTenants(); len(got) != 1 || got[0] != "victim" {
		t.Errorf("ground truth foreign tenants = %v, want [victim]", got)
	}
	if rec.Outcome != "decoded-after-abort" || rec.PromptTokens < 3000 {
		t.Errorf("record outcome %q prompt %d", rec.Outcome, rec.PromptTokens)
	}
	for _, rd := range rec.Reads {
		if rd.Request == rec.Seq || rd.Tenant != "victim" {
			t.Errorf("read %+v is not the victim's", rd)
		}
	}

	// Same seed, same leak; another seed, another leak.
	_, again, _ := incidentScenario(t, 7, FaultOversizeStalePages)
	if again.Choices[0].Message.Content != ch.Message.Content {
		t.Errorf("seed 7 twice gave different answers:\n%q\n%q", ch.Message.Content, again.Choices[0].Message.Content)
	}
	_, other, _ := incidentScenario(t, 8, FaultOversizeStalePages)
	if other.Choices[0].Message.Content == ch.Message.Content {
		t.Errorf("seeds 7 and 8 gave the same answer %q", ch.Message.Content)
	}
}

func TestOversizeRejectedWhenCorrect(t *testing.T) {
	t.Parallel()
	code, r, rec := incidentScenario(t, 7)
	if code != 400 || r.Error == nil {
		t.Fatalf("status %d error %+v, want 400", code, r.Error)
	}
	if r.Error.Type != "invalid_request_error" || r.Error.Code == nil || *r.Error.Code != "context_length_exceeded" ||
		r.Error.Param == nil || *r.Error.Param != "messages" {
		t.Errorf("error = %+v", r.Error)
	}
	if rec.Outcome != "rejected" || len(rec.Reads) != 0 || len(rec.PageTable) != 0 {
		t.Errorf("rejected request touched pages: %+v", rec)
	}
}

func TestFrontEndContextLength(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		words     int
		maxTokens int
		faults    []Fault
		wantCode  int
	}{
		{"under both limits", 100, 16, nil, 200},
		{"over context length", 9000, 16, nil, 400},
		{"over context length even with the incident fault", 9000, 16, []Fault{FaultOversizeStalePages}, 400},
		{"prompt plus max_tokens over context length", 8000, 500, nil, 400},
		{"max_tokens near MaxInt does not overflow the check", 100, math.MaxInt, nil, 400},
		{"auto-truncate swallows it", 9000, 16, []Fault{FaultAutoTruncate}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithFaults(tt.faults...))
			code, r := chat(t, ts.Client(), ts.URL, "t", strings.Repeat(" lorem", tt.words), tt.maxTokens)
			if code != tt.wantCode {
				t.Fatalf("status %d, want %d (%+v)", code, tt.wantCode, r.Error)
			}
			if code == 400 && (r.Error.Code == nil || *r.Error.Code != "context_length_exceeded") {
				t.Errorf("error %+v", r.Error)
			}
		})
	}
}

func TestAutoTruncate(t *testing.T) {
	t.Parallel()
	prompt := "INSTRUCTIONS-ALPHA never reveal the plan." + strings.Repeat(" lorem", 3000)
	for _, fault := range []bool{false, true} {
		opts := []Option{WithCapacity(2048, 16), WithContextLen(8192)}
		if fault {
			opts = append(opts, WithFaults(FaultAutoTruncate))
		}
		ts := NewTestServer(t, opts...)
		code, r := chat(t, ts.Client(), ts.URL, "t", prompt, 16)
		if !fault {
			if code != 400 {
				t.Errorf("correct mode: status %d, want 400", code)
			}
			continue
		}
		rec, _ := ts.Request(r.ID)
		if code != 200 || r.Usage.PromptTokens != ts.MaxRequestInputTokens() || rec.Outcome != "truncated" || rec.PromptTokens <= r.Usage.PromptTokens {
			t.Errorf("auto-truncate: status %d prompt_tokens %d record %+v", code, r.Usage.PromptTokens, rec)
		}
		if strings.Contains(r.Choices[0].Message.Content, "ALPHA") {
			t.Errorf("the truncated head reached the model: %q", r.Choices[0].Message.Content)
		}
	}
}

// abortScenario: tenant alice's request is aborted during prefill, then bob
// sends an ordinary request that takes the freed pages.
func abortScenario(t *testing.T, seed uint64, fault bool) (chatReply, RequestRecord) {
	t.Helper()
	ts := NewTestServer(t, WithCapacity(4096, 16), WithContextLen(8192), WithSeed(seed))
	hdr := []string{HeaderAbort, "prefill"}
	if fault {
		hdr = append(hdr, HeaderFault, string(FaultAbortReuseRace))
	}
	code, r := chat(t, ts.Client(), ts.URL, "alice", strings.Repeat("alice-diagnosis HIV-positive patient 5521. ", 30), 16, hdr...)
	if code != 200 || r.Choices[0].FinishReason != "abort" {
		t.Fatalf("aborted request: %d %+v", code, r)
	}
	code, r = chat(t, ts.Client(), ts.URL, "bob", strings.Repeat("bob weather report sunny. ", 60), 64)
	if code != 200 {
		t.Fatalf("bob: %d %+v", code, r.Error)
	}
	rec, _ := ts.Request(r.ID)
	return r, rec
}

func TestAbortReuseRace(t *testing.T) {
	t.Parallel()
	r, rec := abortScenario(t, 3, true)
	if rec.LateWritesLanded == 0 {
		t.Fatalf("no late write landed in bob's pages: %+v", rec)
	}
	if got := rec.ForeignTenants(); len(got) != 1 || got[0] != "alice" {
		t.Errorf("foreign tenants = %v, want [alice]", got)
	}
	if !strings.Contains(r.Choices[0].Message.Content, "alice") {
		t.Errorf("bob's answer %q carries nothing of alice's", r.Choices[0].Message.Content)
	}
	again, _ := abortScenario(t, 3, true)
	if again.Choices[0].Message.Content != r.Choices[0].Message.Content {
		t.Errorf("same seed, different leak")
	}
	// Correct mode: the in-flight write lands in alice's own pages before
	// they are freed.
	r, rec = abortScenario(t, 3, false)
	if rec.LateWritesLanded != 0 || len(rec.ForeignReads()) != 0 || strings.Contains(r.Choices[0].Message.Content, "alice") {
		t.Errorf("correct mode leaked: %q %+v", r.Choices[0].Message.Content, rec)
	}
}

func TestSharedPrefixCache(t *testing.T) {
	t.Parallel()
	secret := "Board memo: we acquire Globex on 12 March for 4.1 billion. " + strings.Repeat("Confidential. ", 20)
	for _, tt := range []struct {
		name        string
		faults      []Fault
		wantCached  bool
		wantForeign bool
	}{
		{"per-tenant salt", nil, false, false},
		{"global salt", []Fault{FaultSharedPrefixCache}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := NewTestServer(t, WithFaults(tt.faults...))
			if code, _ := chat(t, ts.Client(), ts.URL, "initech", secret, 8); code != 200 {
				t.Fatal(code)
			}
			// The same tenant always hits its own cache.
			_, own := chat(t, ts.Client(), ts.URL, "initech", secret, 8)
			if own.Usage.PromptTokensDetails.CachedTokens == 0 {
				t.Errorf("same tenant: no cached tokens")
			}
			// Another tenant probing with a guess.
			_, probe := chat(t, ts.Client(), ts.URL, "umbrella", secret, 8)
			cached := probe.Usage.PromptTokensDetails.CachedTokens
			if (cached > 0) != tt.wantCached {
				t.Errorf("other tenant cached_tokens = %d", cached)
			}
			rec, _ := ts.Request(probe.ID)
			if foreign := len(rec.ForeignTenants()) > 0; foreign != tt.wantForeign {
				t.Errorf("foreign tenants %v", rec.ForeignTenants())
			}
		})
	}
}
