package policies

import (
	"bytes"
	"testing"

	"github.com/aishield/aishield/internal/golden"
)

func TestExplainGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ preset, dest, golden string }{
		{"default", "openai", "explain_default_openai.golden"},
		{"strict", "default", "explain_strict_default.golden"},
		{"gdpr", "eu-processor", "explain_gdpr_eu.golden"},
	} {
		p, err := Preset(tt.preset)
		if err != nil {
			t.Fatal(err)
		}
		e, err := p.Explain(tt.dest)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := e.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tt.golden, buf.Bytes())
	}
	p, _ := Preset("secrets-only")
	e, err := p.Explain("default")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range e.Detectors {
		if d.Detector[:7] != "secret." {
			t.Errorf("secrets-only explains disabled detector %s", d.Detector)
		}
	}
	if _, err := p.Explain("nope"); err == nil {
		t.Error("unknown destination explained")
	}
}
