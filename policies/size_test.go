package policies

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64 // -1: an error
	}{
		{"536870912", 536870912},
		{"512MiB", 512 << 20},
		{"512mib", 512 << 20},
		{" 2 GB ", 2e9},
		{"1KiB", 1024},
		{"1kb", 1000},
		{"3TiB", 3 << 40},
		{"0", 0},
		{"7b", 7},
		{"", -1},
		{"MiB", -1},
		{"1.5GiB", -1},
		{"-1MiB", -1},
		{"512Mi", -1},
		{"512 megabytes", -1},
		{"99999999999TiB", -1},
		{"9999999999999999999", -1},
		{"1\x00MiB", -1},
	} {
		got, err := ParseSize(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestInboundMaxMemory: the policy's inbound.max_memory is read as a size,
// and a bad or too small one is an error naming the field.
func TestInboundMaxMemory(t *testing.T) {
	t.Parallel()
	const minimal = "levels: [public]\ndefault: {max_level: public}\n"
	p, err := Parse([]byte(minimal+"inbound:\n  max_memory: 512MiB\n"), "yaml", "t")
	if err != nil {
		t.Fatal(err)
	}
	if p.Inbound.MaxMemory != 512<<20 {
		t.Fatalf("MaxMemory = %d", p.Inbound.MaxMemory)
	}
	if p, err = Parse([]byte(minimal), "yaml", "t"); err != nil || p.Inbound.MaxMemory != 0 {
		t.Fatalf("no max_memory: %d, %v", p.Inbound.MaxMemory, err)
	}
	for _, bad := range []string{"lots", "100KiB", "12.5GB"} {
		_, err := Parse([]byte(minimal+"inbound:\n  max_memory: "+bad+"\n"), "yaml", "t")
		if err == nil || !strings.Contains(err.Error(), "inbound.max_memory") {
			t.Errorf("max_memory %q: error %v, want one naming inbound.max_memory", bad, err)
		}
	}
}

// FuzzParseSize: no panic; a size parsed is never negative, and the
// schema's pattern accepts every string ParseSize accepts.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"512MiB", "1 GB", "0", "99999999999TiB", "1\x00", "  7  b "} {
		f.Add(s)
	}
	pattern := regexp.MustCompile(`^ *[0-9]+ *(([kKmMgGtT][iI]?)?[bB])? *$`)
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if strings.Contains(err.Error(), s) && len(s) > 40 {
				t.Fatalf("error quotes all of a long input")
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if !pattern.MatchString(s) {
			t.Fatalf("ParseSize accepts %q, the schema does not", s)
		}
	})
}
