package fingerprint_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aishield/aishield/sdk/fingerprint"
)

func Example() {
	ctx := context.Background()
	store := fingerprint.NewMemoryStore(fingerprint.MemoryOptions{})

	earlier := "Please review the attached contract for Northwind before Friday; the penalty clause in section 7 changed."
	_ = store.Record(ctx, "exchange-1", fingerprint.Hashes(fingerprint.OfString(earlier, fingerprint.Options{})), time.Minute)

	// A later response that carries a fragment of the earlier exchange.
	response := "Sure. THE PENALTY CLAUSE IN SECTION 7 CHANGED, so the review is urgent."
	fps := fingerprint.OfString(response, fingerprint.Options{})
	holders, _ := store.Lookup(ctx, fingerprint.Hashes(fps))
	for _, h := range holders {
		if h.Count > 0 {
			fmt.Println("shared with", h.Exchanges[0])
			break
		}
	}
	fmt.Println("guarantee t =", fingerprint.Options{}.Guarantee())
	// Output:
	// shared with exchange-1
	// guarantee t = 23
}
