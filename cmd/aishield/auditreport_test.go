package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/sdk"
)

// runAuditReport runs audit report with args and returns its exit code
// and output.
func runAuditReport(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"audit", "report"}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.Bytes(), errOut.String()
}

// auditPageCounts reads the counts an audit page shows: the summary cards
// by id, and per destination its data- attributes.
func auditPageCounts(page []byte) map[string]int {
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`id="([a-z-]+)" data-count="(\d+)"`).FindAllSubmatch(page, -1) {
		var n int
		fmt.Sscan(string(m[2]), &n)
		got[string(m[1])] = n
	}
	dest := regexp.MustCompile(`data-destination="([^"]+)" data-exchanges="(\d+)" data-sent="(\d+)" data-tokens-sent="(\d+)" data-blocked="(\d+)" data-refused="(\d+)" data-redactions="(\d+)"`)
	for _, m := range dest.FindAllSubmatch(page, -1) {
		for i, k := range []string{"exchanges", "sent", "tokens-sent", "blocked", "refused", "redactions"} {
			var n int
			fmt.Sscan(string(m[i+2]), &n)
			got[string(m[1])+"/"+k] = n
		}
	}
	got["timeline-refused"] = bytes.Count(page, []byte(`data-refused="true"`))
	got["timeline-blocked"] = bytes.Count(page, []byte(`data-blocked="true"`))
	got["timeline-events"] = bytes.Count(page, []byte(`<tr class="event"`))
	got["quarantine-rows"] = bytes.Count(page, []byte(`<tr class="quarantine"`))
	return got
}

// auditJSONCounts are the same counts from the JSON report.
func auditJSONCounts(t *testing.T, rep *auditReport) map[string]int {
	t.Helper()
	tot := rep.Totals
	want := map[string]int{"exchanges": tot.Exchanges, "sent": tot.Sent, "tokens-sent": tot.TokensSent, "blocked": tot.Blocked,
		"refused": tot.Refused, "flagged": tot.Flagged, "redactions": tot.Redactions, "quarantine-events": tot.QuarantineEvents,
		"quarantine-rows": len(rep.Quarantines)}
	for _, d := range rep.Destinations {
		for k, v := range map[string]int{"exchanges": d.Exchanges, "sent": d.Sent, "tokens-sent": d.TokensSent, "blocked": d.Blocked,
			"refused": d.Refused, "redactions": d.Redactions} {
			want[d.Name+"/"+k] = v
		}
	}
	for _, r := range rep.Timeline {
		switch {
		case r.Event != "":
			want["timeline-events"]++
		case r.Refused:
			want["timeline-refused"]++
		case r.Blocked:
			want["timeline-blocked"]++
		}
	}
	return want
}

// TestAuditReportRealTrail: a trail written by a real guard in front of
// the paged-cache server (a blocked request, refused answers with their
// signals and sources, a quarantine tripped and cleared) gives the same
// figures in text, JSON and HTML, and no value.
func TestAuditReportRealTrail(t *testing.T) {
	key, _ := hex.DecodeString(testAuditKeyHex)
	trail := writeReportTrail(t, t.TempDir(), key)
	t.Setenv(auditKeyEnv, testAuditKeyHex)

	code, js, errOut := runAuditReport(t, "--format", "json", trail)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var rep auditReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	in := rep.Integrity
	if !in.OK || !in.Keyed || in.Heads != 1 || in.Unsealed != 0 || in.Records != 10 {
		t.Errorf("integrity %+v", in)
	}
	tot := rep.Totals
	want := auditTotals{Exchanges: 8, Sent: 6, Blocked: 2, Refused: 2, Redactions: 2, QuarantineEvents: 2, TokensSent: tot.TokensSent,
		Decisions: map[string]int{"allow": 4, "redact": 2, "block": 2}, Verdicts: map[string]int{"clean": 4, "contaminated": 2, "not_sent": 2}}
	if fmt.Sprint(tot) != fmt.Sprint(want) || tot.TokensSent < 10000 {
		t.Errorf("totals %+v, want %+v", tot, want)
	}
	if len(rep.Destinations) != 1 {
		t.Fatalf("destinations %+v", rep.Destinations)
	}
	d := rep.Destinations[0]
	if d.Name != "shared-llm" || d.Exchanges != 8 || d.Refused != 2 || d.Blocked != 2 ||
		fmt.Sprint(d.Detectors) != "map[pii.email:3 pii.ip_address:2 secret.gitlab_token:1]" || fmt.Sprint(d.RedactedBy) != "map[pii.email:2]" {
		t.Errorf("destination %+v", d)
	}
	if len(rep.Quarantines) != 2 || rep.Quarantines[0].Event != "quarantine.tripped" || rep.Quarantines[0].Count != 2 ||
		rep.Quarantines[1].Event != "quarantine.cleared" {
		t.Errorf("quarantines %+v", rep.Quarantines)
	}
	var refused []auditRow
	for _, r := range rep.Timeline {
		if r.Refused {
			refused = append(refused, r)
		}
	}
	if len(rep.Timeline) != 10 || len(refused) != 2 || refused[0].Signals["inbound.usage_mismatch"] != 1 || refused[1].Signals["inbound.usage_mismatch"] != 1 {
		t.Fatalf("timeline: %d rows, refused %+v", len(rep.Timeline), refused)
	}

	code, page, errOut := runAuditReport(t, "--format", "html", trail)
	if code != 0 {
		t.Fatalf("html: exit %d: %s", code, errOut)
	}
	wantCounts := auditJSONCounts(t, &rep)
	gotCounts := auditPageCounts(page)
	for k, v := range wantCounts {
		if gotCounts[k] != v {
			t.Errorf("page %s = %d, JSON %d", k, gotCounts[k], v)
		}
	}
	if !bytes.Contains(page, []byte(`id="integrity" data-ok="true">Integrity: chain intact, keyed`)) {
		t.Error("the page does not state the chain is intact and keyed")
	}
	// The signals and sources of the refused answers (which sources the
	// fault's stale pages hold varies with the exchange IDs).
	for _, r := range refused {
		for s := range r.Signals {
			if !bytes.Contains(page, []byte("<code>"+s+"</code>")) {
				t.Errorf("the page does not show signal %s", s)
			}
		}
		for _, s := range r.Sources {
			if !bytes.Contains(page, []byte("<code>"+s+"</code>")) {
				t.Errorf("the page does not show source %s", s)
			}
		}
	}

	code, text, errOut := runAuditReport(t, trail)
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut)
	}
	for _, line := range []string{
		"OK: chain intact, keyed (HMAC-SHA256, key id ",
		fmt.Sprintf("8 exchanges: 6 sent (%d tokens), 2 blocked, 2 answers refused, 0 flagged, 2 values redacted, 2 quarantine events", tot.TokensSent),
		"decisions: allow=4, block=2, redact=2",
		"verdicts: clean=4, contaminated=2, not_sent=2",
	} {
		if !bytes.Contains(text, []byte(line)) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
	if !regexp.MustCompile(`(?m)^shared-llm +8 +6 +`+fmt.Sprint(tot.TokensSent)+` +allow=4, block=2, redact=2 +2 +2 +2 +pii\.email=3, pii\.ip_address=2, secret\.gitlab_token=1 +pii\.email=2$`).Match(text) ||
		len(regexp.MustCompile(`(?m)^! `).FindAll(text, -1)) != 2 || len(regexp.MustCompile(`(?m)^x `).FindAll(text, -1)) != 2 ||
		!regexp.MustCompile(`(?m)quarantine\.tripped +signs +limit +until cleared`).Match(text) {
		t.Errorf("text report:\n%s", text)
	}
	for _, v := range reportTrailValues {
		if bytes.Contains(js, []byte(v)) || bytes.Contains(page, []byte(v)) || bytes.Contains(text, []byte(v)) {
			t.Fatal("a raw value is in a report")
		}
	}
	if m := rawMarkup(string(page)); m != "" {
		t.Fatalf("raw markup %q", m)
	}

	// Filters: the refused answers only (after the first request, before
	// the quarantine trips).
	since, until := rep.Timeline[1].Time, rep.Timeline[5].Time
	code, js, errOut = runAuditReport(t, "--format", "json", "--since", since.Format(time.RFC3339), "--until", until.Format(time.RFC3339),
		"--destination", "shared-llm", trail)
	var part auditReport
	if code != 0 || json.Unmarshal(js, &part) != nil || part.Totals.Exchanges != 4 || part.Totals.Refused != 2 || part.Totals.Blocked != 1 ||
		part.Totals.QuarantineEvents != 0 || part.Filter.Since == nil {
		t.Errorf("filtered: exit %d %s: %s", code, errOut, js)
	}
	code, js, _ = runAuditReport(t, "--format", "json", "--destination", "other", trail)
	if code != 0 || json.Unmarshal(js, &part) != nil || part.Totals.Exchanges != 0 || len(part.Destinations) != 0 {
		t.Errorf("another destination: exit %d: %s", code, js)
	}
}

// TestAuditReportIntegrity: a tampered trail is reported BROKEN, first,
// in every format, with the records before the break, and exits 1; an
// unkeyed trail says what its chain is worth; a keyed trail without its
// key, a file that is no trail and a bad flag exit 2 without a report.
func TestAuditReportIntegrity(t *testing.T) {
	dir := t.TempDir()
	key, _ := hex.DecodeString(testAuditKeyHex)
	trail := writeReportTrail(t, dir, key)
	data, err := os.ReadFile(trail)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	// An attacker lowers the refused answer's verdict on line 3.
	lines[2] = strings.Replace(lines[2], `"verdict":"contaminated"`, `"verdict":"clean"`, 1)
	tampered := filepath.Join(dir, "tampered.jsonl")
	if err := os.WriteFile(tampered, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(auditKeyEnv, testAuditKeyHex)
	for _, format := range []string{"text", "json", "html"} {
		code, out, errOut := runAuditReport(t, "--format", format, tampered)
		if code != 1 || !strings.Contains(errOut, "the chain is broken at line 4") {
			t.Errorf("%s: exit %d, stderr %q", format, code, errOut)
		}
		switch format {
		case "text":
			if !bytes.HasPrefix(out, []byte("audit report of "+tampered+"\nBROKEN at line 4: prev does not match the HMAC-SHA256 of line 3")) ||
				bytes.Contains(out, []byte("contaminated")) || !bytes.Contains(out, []byte("\n2 exchanges: ")) ||
				!bytes.HasSuffix(out, []byte("BROKEN: the chain breaks at line 4; nothing above can be trusted\n")) {
				t.Errorf("text:\n%s", out)
			}
		case "json":
			var rep auditReport
			if err := json.Unmarshal(out, &rep); err != nil || rep.Integrity.OK || rep.Integrity.Line != 4 || rep.Totals.Exchanges != 2 || len(rep.Timeline) != 2 {
				t.Errorf("json %+v: %v", rep.Integrity, err)
			}
		case "html":
			i := bytes.Index(out, []byte(`<div class="banner bad" id="integrity" data-ok="false" data-line="4">BROKEN TRAIL`))
			if i < 0 || i > bytes.Index(out, []byte(`id="summary"`)) {
				t.Errorf("html: no BROKEN banner before the summary:\n%s", out)
			}
		}
	}

	t.Setenv(auditKeyEnv, "")
	code, _, errOut := runAuditReport(t, trail)
	if code != 2 || !strings.Contains(errOut, "the trail is keyed (HMAC-SHA256, key id ") || !strings.HasSuffix(errOut, ": set "+auditKeyEnv+"\n") {
		t.Errorf("keyed trail without key: exit %d %q", code, errOut)
	}
	plain := filepath.Join(dir, "plain.jsonl")
	writeTrail(t, plain)
	code, out, errOut := runAuditReport(t, "--format", "html", plain)
	if code != 0 || !bytes.Contains(out, []byte(`<div class="banner warn" id="integrity" data-ok="true">Integrity: chain intact, unkeyed (SHA-256), 3 records: integrity only against accidental damage`)) {
		t.Errorf("plain trail: exit %d %s:\n%s", code, errOut, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "policy.yaml")}, "not an audit trail"},
		{[]string{dir}, dir},
		{[]string{"--format", "pdf", plain}, `unknown --format "pdf"`},
		{[]string{"--since", "yesterday", plain}, `time "yesterday"`},
	} {
		code, out, errOut := runAuditReport(t, c.args...)
		if code != 2 || len(out) != 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, out %q, stderr %q", c.args, code, out, errOut)
		}
	}
}

// TestAuditReportTimelineCap: past auditTimelineCap rows the timeline
// stops and counts the rest; the figures count every record.
func TestAuditReportTimelineCap(t *testing.T) {
	var buf bytes.Buffer
	log := sdk.NewAuditLog(&buf, "")
	n := auditTimelineCap + 7
	for i := range n {
		if err := log.Append(&sdk.AuditRecord{Time: time.Unix(int64(i), 0).UTC(), Exchange: fmt.Sprint(i), Destination: "d", Model: "m",
			Tokens: 1, Decision: "allow", Verdict: sdk.VerdictClean}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := buildAuditReport(&buf, "t", nil, false, auditFilter{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Timeline) != auditTimelineCap || rep.TimelineOmitted != 7 || rep.Totals.Exchanges != n || rep.Totals.TokensSent != n {
		t.Errorf("%d rows, %d omitted, totals %+v", len(rep.Timeline), rep.TimelineOmitted, rep.Totals)
	}
	var page bytes.Buffer
	if err := renderHTMLReport(&page, "audit.html", rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), []byte(`data-more="7">and 7 more rows`)) {
		t.Error("the page does not say how many rows are not listed")
	}
}

// FuzzAuditReport: any input either fails to read as a trail or gives a
// report whose page holds no markup but its own, whatever the records'
// strings hold.
func FuzzAuditReport(f *testing.F) {
	var buf bytes.Buffer
	log := sdk.NewAuditLog(&buf, "")
	log.Append(&sdk.AuditRecord{Time: time.Unix(1, 0).UTC(), Exchange: hostile, Destination: hostile, Model: hostile, Principal: hostile,
		Decision: hostile, Level: hostile, Verdict: sdk.Verdict(hostile), Signals: map[string]int{hostile: 1}, Sources: []string{hostile},
		Detectors: map[string]int{hostile: 2}})
	log.Append(&sdk.AuditRecord{Time: time.Unix(2, 0).UTC(), Exchange: "x", Destination: hostile, Event: hostile,
		Quarantine: &sdk.QuarantineRecord{Reason: hostile, Action: hostile}, Signs: map[string]int{hostile: 1}})
	f.Add(buf.Bytes())
	f.Add([]byte(""))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"prev":"` + sdk.GenesisHash + `","destination":"<b>"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := buildAuditReport(bytes.NewReader(data), "f", nil, true, auditFilter{}, time.Unix(0, 0))
		if err != nil {
			return
		}
		var page bytes.Buffer
		if err := renderHTMLReport(&page, "audit.html", rep); err != nil {
			t.Fatal(err)
		}
		if m := rawMarkup(page.String()); m != "" {
			t.Fatalf("raw markup %q", m)
		}
		if err := writeAuditReportText(io.Discard, rep); err != nil {
			t.Fatal(err)
		}
	})
}
