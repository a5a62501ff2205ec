package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// reportTrailValues are the values the requests of writeReportTrail
// carry; no report may show one.
var reportTrailValues = []string{expEmail, expIP, expSecret}

// writeReportTrail writes, with a real guard (keyed with key when it is
// not nil) in front of the paged-cache server with a fault, a trail
// holding allowed, redacted and blocked requests, refused answers (a
// dropped prompt: usage_mismatch), a quarantine tripped and cleared and
// requests refused during it. It returns the trail's path.
func writeReportTrail(t *testing.T, dir string, key []byte) string {
	t.Helper()
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
	polPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polPath, []byte(fmt.Sprintf(exposurePolicy, ts.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.Load(polPath)
	if err != nil {
		t.Fatal(err)
	}
	trailPath := filepath.Join(dir, "audit.jsonl")
	trailFile, err := os.OpenFile(trailPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer trailFile.Close()
	clock := &stepClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	g, err := sdk.New(ctx, sdk.Options{Policy: pol, Audit: trailFile, AuditKey: key, Now: clock.now, Key: []byte("report test key")})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(" lorem", 5000)
	send := principalSender(t, ctx, g, ts.URL)
	steps := []struct {
		principal, text string
		status          int
	}{
		{"alice", "Write to " + expEmail + " about the outage of host " + expIP + ".", 200},
		{"bob", "Deploy with token " + expSecret + " tonight.", 403},
		{"alice", long, 502},
		{"bob", "Thank " + expEmail + " for the report.", 200},
		{"carol", long, 502},
		{"alice", "Remind " + expEmail + " of the meeting.", 503},
		{"erin", "Summarise the plot of Hamlet in one line.", 200},
	}
	for i, s := range steps {
		if got := send(s.principal, s.text); got != s.status {
			t.Fatalf("step %d (%s): status %d, want %d", i, s.principal, got, s.status)
		}
	}
	if _, cleared, err := g.Quarantine().Clear(ctx, "shared-llm"); err != nil || !cleared {
		t.Fatalf("clear: %v, %v", cleared, err)
	}
	if got := send("dave", "Host "+expIP+" is back."); got != 200 {
		t.Fatalf("after the clear: status %d", got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	return trailPath
}
