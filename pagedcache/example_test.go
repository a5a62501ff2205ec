package pagedcache_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aishield/aishield/pagedcache"
)

func post(url, tenant, content string) (status int, id, text string, promptTokens int) {
	body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 24,
		"messages": []map[string]string{{"role": "user", "content": content}}})
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("X-Tenant-ID", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var r struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	if len(r.Choices) > 0 {
		text = r.Choices[0].Message.Content
	}
	return resp.StatusCode, r.ID, text, r.Usage.PromptTokens
}

// The incident in miniature: a cache of 2,048 tokens, a context of 8,192,
// and the oversize-stale-pages fault. A second tenant's over-long prompt is
// answered with the first tenant's data, HTTP 200, prompt_tokens 1.
func Example() {
	s, err := pagedcache.New(pagedcache.Options{
		CapacityTokens: 2048, PageSize: 16, ContextLen: 8192, Seed: 1,
		Faults: []pagedcache.Fault{pagedcache.FaultOversizeStalePages},
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()

	post(hs.URL, "hospital", "Patient Jane Roe, record 5521, diagnosis F32.1. Draft the referral letter.")
	status, id, text, prompt := post(hs.URL, "intruder", strings.Repeat(" lorem", 3000))
	rec, _ := s.Request(id)
	fmt.Println("status", status, "prompt_tokens", prompt)
	fmt.Println("leaks the hospital's record:", strings.Contains(text, "5521") || strings.Contains(text, "Jane"))
	fmt.Println("ground truth: tokens written by", rec.ForeignTenants())
	// Output:
	// status 200 prompt_tokens 1
	// leaks the hospital's record: true
	// ground truth: tokens written by [hospital]
}

// Correct mode refuses the same prompt with OpenAI's error.
func ExampleNew_correct() {
	s, _ := pagedcache.New(pagedcache.Options{CapacityTokens: 2048, PageSize: 16, ContextLen: 8192})
	hs := httptest.NewServer(s)
	defer hs.Close()
	status, _, _, _ := post(hs.URL, "intruder", strings.Repeat(" lorem", 3000))
	fmt.Println("status", status)
	// Output:
	// status 400
}
