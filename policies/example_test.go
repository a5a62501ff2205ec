package policies_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aishield/aishield/policies"
)

const examplePolicy = `
name: example
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*"]
    level: restricted
custom:
  - id: custom.project_apollo
    keywords: [Apollo]
    case_sensitive: true
    level: restricted
destinations:
  - name: openai
    base_url: https://api.openai.com
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 128000
    shared: true
default:
  max_level: public
`

func ExamplePolicy_Decide() {
	p, err := policies.Parse([]byte(examplePolicy), "yaml", "example.yaml")
	if err != nil {
		log.Fatal(err)
	}
	sc, err := p.NewScanner(nil)
	if err != nil {
		log.Fatal(err)
	}
	d := p.Match("https://api.openai.com/v1/chat/completions", "openai", "gpt-4o")
	for _, text := range []string{
		"Please write to jane.doe@acme-corp.com.",
		"Apollo ships in May.",
		"What is the capital of France?",
	} {
		findings, err := sc.ScanString(context.Background(), text)
		if err != nil {
			log.Fatal(err)
		}
		dec := p.Decide(d, findings, 20)
		fmt.Printf("%s %q redact=%v\n", dec.Action, dec.Level, dec.Redact)
	}
	// The incident: a request larger than the destination's real capacity.
	dec := p.Decide(d, nil, 1_048_577)
	fmt.Println(dec.Action, dec.Reasons[0].Message)
	// Output:
	// redact "confidential" redact=[0]
	// block "restricted" redact=[]
	// allow "" redact=[]
	// block request of 1048577 tokens exceeds the real capacity of destination openai (max_input_tokens 128000): blocked before sending
}

func ExampleParse_errors() {
	_, err := policies.Parse([]byte("levels: [public, internal]\ndestinations:\n  - {name: x, provider: openai, max_level: secret}\n"), "yaml", "team.yaml")
	fmt.Println(err)
	// Output:
	// team.yaml: destinations[0].max_level: level "secret" is not declared in levels (public, internal)
}

func ExampleLint() {
	p, err := policies.Parse([]byte(`
levels: [public, internal, confidential]
destinations:
  - {name: gpu-cloud, base_url: "https://gpu.example.net", max_level: confidential, shared: true, max_input_tokens: 681280}
`), "yaml", "team.yaml")
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range policies.Lint(context.Background(), p, policies.LintOptions{}) {
		fmt.Println(d)
	}
	// Output:
	// team.yaml: error[shared-without-contract]: destinations[0].max_level: destination gpu-cloud is on shared infrastructure without a contract but may receive confidential data (above internal)
}

func ExamplePreset() {
	p, err := policies.Preset("strict")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name, p.Levels, p.Default.MaxLevel, p.Default.Action)
	// Output:
	// strict [public internal confidential restricted] public block
}
