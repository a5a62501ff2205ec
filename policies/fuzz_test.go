package policies

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader in every format: it must
// never panic, and every failure must be a *LoadError naming the file.
func FuzzParse(f *testing.F) {
	for _, name := range Presets() {
		src, _ := PresetSource(name)
		f.Add(src, uint8(0))
	}
	f.Add([]byte(basePolicy), uint8(0))
	f.Add([]byte(`{"levels":["a","b"],"destinations":[{"name":"x","max_level":"b","max_input_tokens":1e99}]}`), uint8(1))
	f.Add([]byte("levels = [\"a\"]\n[[destinations]]\nname = \"x\"\nmax_level = \"a\"\n"), uint8(2))
	f.Add([]byte("levels: &a [x, *a]\n"), uint8(0))
	f.Add([]byte("levels: [a]\ncustom:\n  - {id: custom.x, pattern: '(?<=a', level: a}\n"), uint8(0))
	f.Add([]byte("levels: [a]\ninbound: {signals: {canary: [1, 2]}}\n"), uint8(0))
	f.Add([]byte("? [a, b]\n: c\n"), uint8(0))
	formats := []string{"yaml", "json", "toml"}
	f.Fuzz(func(t *testing.T, data []byte, fi uint8) {
		format := formats[int(fi)%len(formats)]
		p, err := Parse(data, format, "fuzz."+format)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("error %T %v is not a *LoadError with problems", err, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz."+format) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(p.Levels) == 0 || p.Default == nil || p.DefaultLevel == "" {
			t.Fatalf("a loaded policy misses levels or defaults: %+v", p)
		}
		// A loaded policy decides without panicking.
		for _, d := range append(p.Destinations, p.Default) {
			p.Decide(d, nil, 1<<30)
			if p.Rank(d.MaxLevel) < 0 {
				t.Fatalf("destination %s has an undeclared max level", d.Name)
			}
		}
	})
}
