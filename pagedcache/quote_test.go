package pagedcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want uint8
	}{
		{"", clsKnown},
		{"Roe", clsKnown},
		{" Roe", clsKnown | clsStartWS},
		{".ro", clsKnown},
		{"@example", clsKnown},
		{" ", clsKnown | clsStartWS | clsEndWS | clsAllWS},
		{"\n\n", clsKnown | clsStartWS | clsEndWS | clsAllWS | clsStartNL | clsHasNL},
		{".\n", clsKnown | clsEndWS | clsHasNL},
		{":", clsKnown | clsColon},
		{" user:", clsKnown | clsStartWS | clsColon},
		{"a: ", clsKnown | clsEndWS | clsColon},
		{"\xe6", clsKnown}, // a byte of a multi-byte character
	}
	for _, tt := range tests {
		if got := classify(tt.text); got != tt.want {
			t.Errorf("classify(%q) = %07b, want %07b", tt.text, got, tt.want)
		}
	}
}

var (
	emailRe       = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	placeholderRe = regexp.MustCompile(`\[\[[A-Z0-9_]+\]\]`)
	canaryRe      = regexp.MustCompile(`aishield-canary-[a-z2-7]*`)
)

// quoteProps checks an answer against the text it may quote: every word
// of the answer is a whole word of src (the last one may be cut short when
// max_tokens cut the answer), no quote starts with a role header, and an
// e-mail address, a [[...]] placeholder or a canary of src appears whole or
// not at all.
func quoteProps(t *testing.T, label, src, answer, finish string) {
	t.Helper()
	words := map[string]bool{}
	for _, w := range strings.Fields(src) {
		words[w] = true
	}
	fields := strings.Fields(answer)
	for i, w := range fields {
		if i == len(fields)-1 && finish == "length" && !strings.HasSuffix(answer, w+" ") && !strings.HasSuffix(answer, w+"\n") {
			// Cut inside a character, the bytes left read as U+FFFD.
			if w = strings.TrimRight(w, "\uFFFD"); w == "" {
				continue
			}
			found := false
			for sw := range words {
				if strings.HasPrefix(sw, w) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: last word %q (cut by max_tokens) starts no word of the source; answer %q", label, w, answer)
			}
			continue
		}
		if !words[w] {
			t.Errorf("%s: %q is not a whole word of the source; answer %q", label, w, answer)
		}
		if w == "user:" || w == "system:" || w == "assistant:" {
			t.Errorf("%s: role header %q quoted; answer %q", label, w, answer)
		}
	}
	if finish == "length" { // a cut last word is checked above
		if i := strings.LastIndexAny(answer, " \n"); i >= 0 {
			answer = answer[:i]
		} else {
			answer = ""
		}
	}
	for _, re := range []*regexp.Regexp{emailRe, placeholderRe, canaryRe} {
		whole := map[string]bool{}
		for _, m := range re.FindAllString(src, -1) {
			whole[m] = true
		}
		for _, m := range re.FindAllString(answer, -1) {
			if !whole[m] {
				t.Errorf("%s: %q is not one of the source's %v; answer %q", label, m, whole, answer)
			}
		}
	}
	if o, c, n := strings.Count(answer, "[["), strings.Count(answer, "]]"), len(placeholderRe.FindAllString(answer, -1)); o != n || c != n {
		t.Errorf("%s: %d \"[[\", %d \"]]\", %d whole placeholders in %q", label, o, c, n, answer)
	}
}

// post sends a JSON body and decodes the answer's text and finish reason
// (chat or completions).
func post(t *testing.T, ts *TestServer, path string, body any) (text, finish string, completion int) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := ts.Client().Post(ts.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, raw)
	}
	var r struct {
		Choices []struct {
			Text    string `json:"text"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	c := r.Choices[0]
	return c.Message.Content + c.Text, c.FinishReason, r.Usage.CompletionTokens
}

// TestQuotesAreWholeWords draws many seeded answers over prompts full of
// things a splice would forge (e-mail addresses glued to punctuation,
// redaction placeholders, a canary, numbers, non-ASCII text, lines that
// look like headers) and checks every answer quotes whole words only.
func TestQuotesAreWholeWords(t *testing.T) {
	t.Parallel()
	canary := "aishield-canary-mfrgg2lbnzsgc3tf"
	tests := []struct {
		name     string
		system   string
		user     string
		complete bool // /v1/completions with user as the raw prompt
	}{
		{"contacts and placeholders",
			"You are a helpful assistant.\n\nInternal request reference: " + canary + " (for routing only; do not repeat it).",
			"Contact jane.roe@example.com or [[PII_EMAIL_0001]], phone [[PII_PHONE_0002]] (mobile), and cc a.b-c@mail.example.org; " +
				"the invoice for ACME-7731 is 4,120.50 EUR, due 2026-03-12.", false},
		{"glued identifiers",
			"",
			"ids:[[PII_EMAIL_0003]][[PII_PHONE_0004]],x@y.io;z.w@q.co.uk|[[SECRET_AWS_0005]] then the rest of the sentence " +
				"with more plain words to quote from, and more, and more.", false},
		{"many lines that look like headers",
			"Rules:\nnever reveal the plan.\nNote: keep answers short.",
			"Summary: the meeting moved.\nWhen: Tuesday 10:30\nWho: jane.roe@example.com, bob@example.net\n" +
				"Where: room [[PII_ADDRESS_0006]]\nThanks!", false},
		{"non-ASCII", "",
			"Über naïve café — 漢字とかな 5521 tokens, «quoted» text, emoji 🙂 and ß; reach mé@exämple.de or ana@example.es.", false},
		{"raw completion prompt", "",
			"Once upon a time, jane.roe@example.com wrote to [[PII_EMAIL_0007]]:\nuser: this line looks like a chat turn\nassistant: and so does this one.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src string
			var msgs []map[string]string
			if tt.complete {
				src = tt.user
			} else {
				if tt.system != "" {
					msgs = append(msgs, map[string]string{"role": "system", "content": tt.system})
					src += "system: " + tt.system + "\n"
				}
				msgs = append(msgs, map[string]string{"role": "user", "content": tt.user})
				src += "user: " + tt.user + "\nassistant:"
			}
			stops, lengths := 0, 0
			for seed := uint64(1); seed <= 30; seed++ {
				ts := NewTestServer(t, WithSeed(seed))
				for _, maxTokens := range []int{5, 24, 200} {
					label := fmt.Sprintf("seed %d max_tokens %d", seed, maxTokens)
					var text, finish string
					var n int
					if tt.complete {
						text, finish, n = post(t, ts, "/v1/completions", map[string]any{"prompt": tt.user, "max_tokens": maxTokens})
					} else {
						text, finish, n = post(t, ts, "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": maxTokens})
					}
					switch {
					case finish == "length" && n == maxTokens:
						lengths++
					case finish == "stop" && n < maxTokens && n > 0:
						stops++
					default:
						t.Errorf("%s: finish %q with %d tokens", label, finish, n)
					}
					quoteProps(t, label, src, text, finish)
				}
			}
			if stops == 0 || lengths == 0 {
				t.Errorf("%d answers stopped, %d cut by max_tokens: want both", stops, lengths)
			}
		})
	}
}

// TestQuotesAreDeterministic: the same seed gives the same answer, plain
// and streamed; another seed another answer.
func TestQuotesAreDeterministic(t *testing.T) {
	t.Parallel()
	body := map[string]any{"messages": []map[string]string{{"role": "user", "content": victimText(0) + " Write to jane.roe@example.com."}}, "max_tokens": 200}
	answer := func(seed uint64) string {
		ts := NewTestServer(t, WithSeed(seed))
		text, _, _ := post(t, ts, "/v1/chat/completions", body)
		again, _, _ := post(t, ts, "/v1/chat/completions", body) // now from prefix-cache pages
		if again != text {
			t.Errorf("seed %d: %q then %q", seed, text, again)
		}
		return text
	}
	if a, b := answer(3), answer(3); a != b {
		t.Errorf("seed 3 twice: %q, %q", a, b)
	}
	if answer(3) == answer(4) {
		t.Errorf("seeds 3 and 4 gave the same answer")
	}
}

// TestOversizeQuotesWholeWords: under the incident the answer is made of
// whole words of the earlier requests' text, read from stale pages, and the
// ground truth still names their writers.
func TestOversizeQuotesWholeWords(t *testing.T) {
	t.Parallel()
	victims := []string{
		"Patient Jane Roe, NHS 943 476 5919, e-mail jane.roe@example.com, diagnosis F32.1. Draft the referral to [[PII_EMAIL_0001]].",
		"Wire 98,000 EUR to IBAN [[PII_IBAN_0002]] before Friday; confirm with ops-team@globex.example.net and reply.",
		"Board memo: we acquire Initech on 12 March for 4.1 billion, contact cfo@initech.example (mobile [[PII_PHONE_0003]]).",
	}
	// The victims' answers are quotes of their prompts, so their words too.
	src := "user: " + strings.Join(victims, "\nuser: ") + "\nassistant:"
	leaks := 0
	for seed := uint64(1); seed <= 12; seed++ {
		ts := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithSeed(seed), WithFaults(FaultOversizeStalePages))
		for i, v := range victims {
			if code, r := chat(t, ts.Client(), ts.URL, fmt.Sprintf("victim-%d", i), v, 40); code != 200 {
				t.Fatalf("victim %d: %d %+v", i, code, r.Error)
			}
		}
		code, r := chat(t, ts.Client(), ts.URL, "mallory", strings.Repeat(" lorem", 3000), 64)
		if code != 200 || r.Choices[0].FinishReason != "length" || r.Usage.PromptTokens != 1 {
			t.Fatalf("seed %d: status %d %+v", seed, code, r)
		}
		quoteProps(t, fmt.Sprintf("seed %d", seed), src, r.Choices[0].Message.Content, "length")
		rec, _ := ts.Request(r.ID)
		for _, rd := range rec.Reads {
			if rd.Request == rec.Seq || !strings.HasPrefix(rd.Tenant, "victim-") {
				t.Errorf("seed %d: read %+v is not a victim's", seed, rd)
			}
		}
		if len(rec.ForeignTenants()) > 0 && strings.TrimSpace(r.Choices[0].Message.Content) != "" {
			leaks++
		}
	}
	if leaks != 12 {
		t.Errorf("%d of 12 seeds leaked", leaks)
	}
}

// TestQuotesOverLongWords: a word longer than the answer's target is said
// whole once, or cut by max_tokens; a context whose only word is longer
// than the model's reach gets an empty answer rather than a fragment.
func TestQuotesOverLongWords(t *testing.T) {
	t.Parallel()
	blob := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3", 60) // ~1,400 tokens, no space
	tests := []struct {
		name      string
		content   string
		maxTokens int
		empty     bool
	}{
		{"one huge word", blob, 200, true},
		{"one huge word, small max_tokens", blob, 5, true},
		{"a long word among short ones", "short " + blob[:100] + " tail words here", 200, false},
		{"a long word cut by max_tokens", "short " + blob[:200] + " tail", 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "user: " + tt.content + "\nassistant:"
			for seed := uint64(1); seed <= 20; seed++ {
				ts := NewTestServer(t, WithSeed(seed))
				text, finish, n := post(t, ts, "/v1/chat/completions", map[string]any{
					"messages": []map[string]string{{"role": "user", "content": tt.content}}, "max_tokens": tt.maxTokens})
				if tt.empty && (text != "" || finish != "stop" || n != 0) {
					t.Errorf("seed %d: %q %s %d, want an empty answer", seed, text, finish, n)
				}
				if n > tt.maxTokens || (finish == "length") != (n == tt.maxTokens) {
					t.Errorf("seed %d: %d tokens, finish %q", seed, n, finish)
				}
				quoteProps(t, fmt.Sprintf("seed %d", seed), src, text, finish)
			}
		})
	}
}

// TestSeedParameter: the same request gets the same answer; the same prompt
// with another seed (a regenerate) gets another one.
func TestSeedParameter(t *testing.T) {
	ts := NewTestServer(t, WithSeed(7))
	ask := func(seed *int64) string {
		body := map[string]any{"model": "m", "max_tokens": 64, "messages": []any{map[string]any{"role": "user",
			"content": "Our refund policy: items can be returned within thirty days of delivery, unused and in their original packaging, with the receipt; refunds reach the original payment method within five working days."}}}
		if seed != nil {
			body["seed"] = *seed
		}
		data, _ := json.Marshal(body)
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
			t.Fatalf("answer: %v", err)
		}
		return out.Choices[0].Message.Content
	}
	one, two := int64(1), int64(2)
	if a, b := ask(nil), ask(nil); a != b || a == "" {
		t.Errorf("same request, different answers: %q, %q", a, b)
	}
	if a, b := ask(&one), ask(&one); a != b {
		t.Errorf("same seed, different answers: %q, %q", a, b)
	}
	if a, b := ask(&one), ask(&two); a == b {
		t.Errorf("seeds 1 and 2 gave the same answer %q", a)
	}
}
