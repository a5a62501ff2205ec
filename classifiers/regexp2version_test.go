package classifiers

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	regexp2v1 "github.com/dlclark/regexp2"
	"github.com/dlclark/regexp2/v2"
)

// TestRegexp2V2MatchesV1 checks that custom-rule patterns find, with
// regexp2 v2 as compileCustom sets it up, the matches (whole match and
// the value group, in runes) that regexp2 v1 finds, over fixed and random
// texts: the rules of a policy keep their meaning with the version the
// command links.
func TestRegexp2V2MatchesV1(t *testing.T) {
	t.Parallel()
	patterns := []string{
		`\b(?:OPS|SEC)-\d{6}\b`,
		`[A-Z]{3}-\d{4}`,
		`(?i)falcon\s+launch\s+\d+`,
		`(?<=contract )(?<value>CT-\d{6})(?!\d)`,
		`\b\d{12}\b`,
		`(?<value>[a-z]+)@(?:corp|intra)\.example`,
		`(\w)\1{2,}`,
		`(?<!\d)\d{3}(?:[ -]?\d{2}){2}(?!\d)`,
		`\p{Lu}\p{Ll}+\s\p{Lu}\p{Ll}+`,
		`(?m)^key:\s*(?<value>\S+)$`,
		`[^\x00-\x7F]+`,
		`\bé\w*`,
		`(?s)BEGIN.*?END`,
		`(?:ab|a)(?:bc|c)`,
		`x*`,
	}
	fixed := []string{
		"", "ticket OPS-123456 and SEC-654321x, SEC-1234567", "ABC-1234 abc-1234 ABCD-12345",
		"Falcon  LAUNCH 42 falcon launch", "contract CT-123456 contract CT-1234567", "account 123456789012",
		"ann@corp.example bob@intra.example eve@other.example", "aaab bbbb zz", "123 45 67, 1234567, 12345678",
		"Jean Dupont et Éloïse Martin", "key: abc\nkey:   def \nkey:", "café naïve 東京 ok", "été élan",
		"BEGIN x\ny END BEGIN z END", "abc ac abcbc", "xxx",
	}
	alphabet := []string{"a", "b", "c", "x", "A", "C", "T", "O", "P", "S", "E", "-", " ", "\n", "@", ".", ":",
		"0", "1", "2", "3", "9", "é", "É", "東", "contract ", "key: ", "corp.example", "falcon launch ", "BEGIN", "END"}
	rng := rand.New(rand.NewPCG(20, 15))
	texts := append([]string(nil), fixed...)
	for range 300 / raceScale {
		var sb strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, sb.String())
	}
	for _, p := range patterns {
		c, err := compileCustom(CustomRule{ID: "custom.diff", Pattern: p}, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		old, err := regexp2v1.Compile(p, regexp2v1.None)
		if err != nil {
			t.Fatalf("%s: v1: %v", p, err)
		}
		old.MatchTimeout = time.Second
		for _, text := range texts {
			runes := []rune(text)
			got, want := matchesV2(t, c.re, runes), matchesV1(t, old, runes)
			if got != want {
				t.Errorf("pattern %q over %q:\nv2 %s\nv1 %s", p, text, got, want)
			}
		}
	}
}

// matchesV2 lists every match of re in r: whole match and value group,
// in runes.
func matchesV2(t *testing.T, re *regexp2.Regexp, r []rune) string {
	t.Helper()
	var sb strings.Builder
	m, err := re.FindRunesMatch(r)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		sb.WriteString(spanString(m.RuneIndex, m.RuneLength))
		if g := m.GroupByName("value"); g != nil && len(g.Captures) > 0 {
			sb.WriteString("=" + spanString(g.RuneIndex, g.RuneLength))
		}
		sb.WriteByte(' ')
	}
	if err != nil {
		t.Fatalf("v2: %v", err)
	}
	return sb.String()
}

// matchesV1 is matchesV2 with regexp2 v1.
func matchesV1(t *testing.T, re *regexp2v1.Regexp, r []rune) string {
	t.Helper()
	var sb strings.Builder
	m, err := re.FindRunesMatch(r)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		sb.WriteString(spanString(m.Index, m.Length))
		if g := m.GroupByName("value"); g != nil && len(g.Captures) > 0 {
			sb.WriteString("=" + spanString(g.Index, g.Length))
		}
		sb.WriteByte(' ')
	}
	if err != nil {
		t.Fatalf("v1: %v", err)
	}
	return sb.String()
}

func spanString(i, n int) string { return strconv.Itoa(i) + "+" + strconv.Itoa(n) }
