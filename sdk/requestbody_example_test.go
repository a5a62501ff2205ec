package sdk_test

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/aishield/aishield/sdk"
)

// ValidatePath refuses the paths a server could resolve elsewhere than the
// guard decided for; sdk.Transport calls it (through Guard.Check) on every
// request.
func ExampleValidatePath() {
	for _, p := range []string{"/v1/chat/completions", "/v1/../../admin", "/v1/%2e%2e/admin", "/v1/files%2fx"} {
		u, _ := url.Parse("https://api.example.com" + p)
		err := sdk.ValidatePath(u)
		fmt.Println(p, errors.Is(err, sdk.ErrInvalidPath))
	}
	// Output:
	// /v1/chat/completions false
	// /v1/../../admin true
	// /v1/%2e%2e/admin true
	// /v1/files%2fx true
}
