package classifiers

import (
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
	words := newWordTable(nameWords)
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
	words := newWordTable(nameWords)
	cues := newWordTable(nameCues)
	f.Fuzz(func(t *testing.T, w string) {
		if got, want := words.at([]byte(w)), nameWords[w]; got != want {
			t.Fatalf("nameWords table: %v, map: %v", got, want)
		}
		if got, want := cues.at([]byte(w)), nameCues[w]; got != want {
			t.Fatalf("nameCues table: %v, map: %v", got, want)
		}
	})
}
