package classifiers

import (
	"bytes"
	"testing"
)

func TestWordTable(t *testing.T) {
	for name, m := range map[string]map[string]bool{"labels": nameLabels, "fields": nameFields, "places": namePlaces,
		"verbs": nameVerbs, "closings": nameClosings, "particles": nameParticles, "reserved": reservedNames} {
		tb := newWordTable(m)
		for k, v := range m {
			if got, ok := tb.get([]byte(k)); !ok || got != v {
				t.Errorf("%s: get(%q) = %v, %v; want %v, true", name, k, got, ok, v)
			}
		}
		for _, w := range []string{"", "x", "nam", "names", "Name", "name ", "zzzzzzzzzzzzzzzzzz", "signé par."} {
			if got, ok := tb.get([]byte(w)); ok != m[w] || got != m[w] {
				t.Errorf("%s: get(%q) = %v, %v; the map says %v", name, w, got, ok, m[w])
			}
		}
	}
	words, nameWords := nameWordTable, nameWordMap()
	for k, v := range nameWords {
		if got := words.at([]byte(k)); got != v {
			t.Errorf("nameWords: at(%q) = %v, want %v", k, got, v)
		}
	}
}

func FuzzWordTable(f *testing.F) {
	for _, s := range []string{"renaud", "dr", "jean-pierre", "müller", "o'neil", "", "abcdefghijklmnopq"} {
		f.Add(s)
	}
	nameWords, nameCues := nameWordMap(), nameCueMap()
	words, cues := nameWordTable, nameCueTable
	f.Fuzz(func(t *testing.T, w string) {
		if got, want := words.at([]byte(w)), nameWords[w]; got != want {
			t.Fatalf("nameWords table: %v, map: %v", got, want)
		}
		if got, want := cues.at([]byte(w)), nameCues[w]; got != want {
			t.Fatalf("nameCues table: %v, map: %v", got, want)
		}
	})
}

// lowerNameSpec is lowerName's definition, appended byte by byte.
func lowerNameSpec(dst, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isUpper(c):
			c += 0x20
		case c == 0xC3 && i+1 < len(v) && v[i+1] >= 0x80 && v[i+1] < 0x9F && v[i+1] != 0x97:
			dst = append(dst, c, v[i+1]+0x20)
			i++
			continue
		}
		dst = append(dst, c)
	}
	if n := len(dst); n > 0 && dst[n-1] == '.' {
		dst = dst[:n-1]
	}
	return dst
}

func TestLowerName(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{"Renaud", "renaud"}, {"ÉLODIE", "élodie"}, {"M.", "m"}, {"O'NEIL", "o'neil"},
		{"Müller", "müller"}, {"A×B", "a×b"}, {"\xc3", "\xc3"}, {"", ""}, {"..", "."},
	} {
		got := string(lowerName(nil, []byte(tc.v)))
		if got != tc.want || got != string(lowerNameSpec(nil, []byte(tc.v))) {
			t.Errorf("lowerName(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func FuzzLowerName(f *testing.F) {
	for _, s := range []string{"Renaud", "ÉLODIE.", "\xc3\x97", "Ÿ", "a.", ""} {
		f.Add([]byte("x."), []byte(s))
	}
	f.Fuzz(func(t *testing.T, dst, v []byte) {
		got := lowerName(bytes.Clone(dst), v)
		if want := lowerNameSpec(bytes.Clone(dst), v); !bytes.Equal(got, want) {
			t.Fatalf("lowerName(%q, %q) = %q, its definition gives %q", dst, v, got, want)
		}
	})
}
