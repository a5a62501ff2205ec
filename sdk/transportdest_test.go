package sdk_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// TestTransportDestinationAndPrincipal: one Guard serves several
// Transports, each forcing its destination (the decision follows it: the
// capacity of openai-test refuses what anthropic-test accepts) and naming
// each request's principal through its hook, which the audit record
// carries; the caller's request is not modified. An unknown destination
// fails closed before anything is sent.
func TestTransportDestinationAndPrincipal(t *testing.T) {
	u := newUpstream(t)
	var mu sync.Mutex
	var recs []sdk.AuditRecord
	g := newGuard(t, sdk.Options{OnRecord: func(r sdk.AuditRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	who := func(r *http.Request) string { return r.Header.Get("X-Who") }
	long := strings.Repeat("word ", 6000) // over openai-test's 5,000 tokens
	tests := []struct {
		name, dest, principal, text string
		wantDest                    string
		wantBlocked, wantGuardErr   bool
	}{
		{name: "matched", text: "What is the capital of France?", wantDest: "openai-test"},
		{name: "forced", dest: "anthropic-test", principal: "team-billing", text: "What is the capital of France?", wantDest: "anthropic-test"},
		{name: "matched over capacity", text: long, wantDest: "openai-test", wantBlocked: true},
		{name: "forced without capacity", dest: "anthropic-test", principal: "team-billing", text: long, wantDest: "anthropic-test"},
		{name: "unknown destination", dest: "nowhere", text: "hello", wantGuardErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			recs = nil
			mu.Unlock()
			sent := len(u.received())
			c := &http.Client{Transport: &sdk.Transport{Guard: g, Destination: tt.dest, Principal: who}}
			body := chatBody(tt.text)
			req, _ := http.NewRequest("POST", u.URL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tt.principal != "" {
				req.Header.Set("X-Who", tt.principal)
			}
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			if req.Header.Get("X-Who") != tt.principal || req.ContentLength != int64(len(body)) {
				t.Errorf("the caller's request was modified")
			}
			var be *sdk.BlockedError
			var ge *sdk.GuardError
			switch {
			case tt.wantGuardErr:
				if !errors.As(err, &ge) || ge.Stage != sdk.StageParse || len(u.received()) != sent {
					t.Fatalf("unknown destination: %v, %d requests sent", err, len(u.received())-sent)
				}
				return
			case tt.wantBlocked:
				if !errors.As(err, &be) || !be.OverCapacity || be.Destination != tt.wantDest {
					t.Fatalf("want blocked over capacity at %s, got %v", tt.wantDest, err)
				}
			case err != nil:
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(recs) != 1 || recs[0].Destination != tt.wantDest || recs[0].Principal != tt.principal {
				t.Fatalf("audit records %+v, want one for destination %s and principal %q", recs, tt.wantDest, tt.principal)
			}
		})
	}
}
