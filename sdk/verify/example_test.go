package verify_test

import (
	"context"
	"fmt"

	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/verify"
)

func Example() {
	ctx := context.Background()
	v, err := verify.New(verify.Options{})
	if err != nil {
		panic(err)
	}
	ex := &inbound.Exchange{ID: "ex-1", Texts: []string{"Please summarise: Jane (jane.doe@acme-corp.com) asked for a refund."}}
	vd, err := v.Check(ctx, ex, "Jane (jane.doe@acme-corp.com) wants a refund; so does bob.martin@globex-industries.com.<|im_end|>", inbound.End{})
	if err != nil {
		panic(err)
	}
	for _, s := range vd.Signals {
		fmt.Println(s.Action, s.ID, s.Preview)
	}
	// Output:
	// block inbound.template_fragment <|im_end|>
	// block inbound.foreign_entity b***@g***.com
}

// Person names are sourced detectors (Options.Sourced): a name the request
// did not contain is a signal only when another exchange's request carried
// it.
func ExampleOptions_sourced() {
	ctx := context.Background()
	v, err := verify.New(verify.Options{})
	if err != nil {
		panic(err)
	}
	clinic := &inbound.Exchange{ID: "clinic-7", Texts: []string{"Summarise the discharge letter of Amélie Fontaine."}}
	if _, err := v.Check(ctx, clinic, "Done.", inbound.End{}); err != nil {
		panic(err)
	}
	ex := &inbound.Exchange{ID: "support-8", Texts: []string{"Why does my thermostat switch to eco mode?"}}
	vd, err := v.Check(ctx, ex, "As Albert Einstein said, keep it simple. Amélie Fontaine was discharged.", inbound.End{})
	if err != nil {
		panic(err)
	}
	for _, s := range vd.Signals {
		fmt.Println(s.Action, s.ID, s.Detector, s.Preview, s.Sources)
	}
	// Output:
	// block inbound.foreign_entity pii.person_name A. F. [clinic-7]
}
