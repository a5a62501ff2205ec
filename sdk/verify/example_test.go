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
