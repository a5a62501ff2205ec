package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// TestVerifiedByDefault: a guard built with the policy alone verifies every
// answer with the policy's inbound settings, and the audit trail says which
// checks ran; verification goes off only when the caller says so.
func TestVerifiedByDefault(t *testing.T) {
	const foreign = "Done. Also, margaux.delacroix@orange.fr asked about her invoice."
	tests := []struct {
		name    string
		opts    sdk.Options
		refused bool
		checks  []string
	}{
		{"policy alone", sdk.Options{}, true, []string{policies.SignalForeignEntity, policies.SignalCanary,
			policies.SignalCrossExchange, policies.SignalTemplateFragment, policies.SignalUsageMismatch, policies.SignalForeignPlaceholder}},
		{"NoVerify", sdk.Options{NoVerify: true}, false, []string{policies.SignalForeignPlaceholder}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var records []sdk.AuditRecord
			var mu sync.Mutex
			tt.opts.OnRecord = func(r sdk.AuditRecord) { mu.Lock(); records = append(records, r); mu.Unlock() }
			g := newGuard(t, tt.opts)
			if !slices.Equal(g.Checks(), tt.checks) {
				t.Errorf("Checks() = %v, want %v", g.Checks(), tt.checks)
			}
			x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("Book the room for Friday.")})
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Response(context.Background(), 200, "application/json", chatResponse(foreign, "stop"))
			var ce *sdk.ContaminationError
			if errors.As(err, &ce) != tt.refused {
				t.Fatalf("err = %v, refused want %v", err, tt.refused)
			}
			if len(records) != 1 {
				t.Fatalf("%d records", len(records))
			}
			rec := records[0]
			want := sdk.VerdictClean
			if tt.refused {
				want = sdk.VerdictContaminated
			}
			if rec.Verdict != want || !slices.Equal(rec.Checks, tt.checks) || rec.Exchange != x.ID {
				t.Errorf("record: verdict %s checks %v, want %s %v", rec.Verdict, rec.Checks, want, tt.checks)
			}
		})
	}
}

// TestPolicyAuditFile: a policy whose audit section is enabled gets its
// trail written without any option, and a second guard on the same file
// (a restart) continues the chain instead of starting a new one.
func TestPolicyAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	src := strings.Replace(testPolicy, "%s", "closed", 1) + "audit:\n  enabled: true\n  path: " + path + "\n"
	pol, err := policies.Parse([]byte(src), "yaml", "audited.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 2; run++ {
		g := newGuard(t, sdk.Options{Policy: pol})
		x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.Response(context.Background(), 200, "application/json", chatResponse("Done.", "stop")); err != nil {
			t.Fatal(err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(email)) {
		t.Fatal("the audit trail holds a raw value")
	}
	n, _, err := sdk.ReadAudit(bytes.NewReader(data), false, nil)
	if err != nil || n != 2 {
		t.Fatalf("%d lines, %v", n, err)
	}
}
