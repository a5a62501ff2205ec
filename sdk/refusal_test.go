package sdk_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// TestRefusalOf maps the guard's errors to their answers by type, never by
// text; other errors are not the guard's.
func TestRefusalOf(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"request too large", &sdk.GuardError{Stage: sdk.StageParse, Err: fmt.Errorf("reading request body: %w", sdk.ErrTooLarge)}, 413, "request_too_large"},
		{"response too large", &sdk.GuardError{Stage: sdk.StageResponse, Err: fmt.Errorf("reading response body: %w", sdk.ErrTooLarge)}, 502, "response_too_large"},
		{"response text says larger than", &sdk.GuardError{Stage: sdk.StageResponse, Err: errors.New("a number larger than the schema allows")}, 500, "aishield_guard_error"},
		{"request text says larger than", &sdk.GuardError{Stage: sdk.StageParse, Err: errors.New("array larger than expected")}, 400, "aishield_unparsable"},
		{"blocked", &sdk.BlockedError{Destination: "upstream"}, 403, "aishield_blocked"},
		{"over capacity", &sdk.BlockedError{Destination: "upstream", OverCapacity: true}, 400, "aishield_over_capacity"},
		{"contaminated, wrapped", fmt.Errorf("call: %w", &sdk.ContaminationError{Destination: "upstream"}), 502, "aishield_contamination"},
	}
	for _, tt := range tests {
		r, ok := sdk.RefusalOf(tt.err)
		if !ok || r.Status != tt.status || r.Code != tt.code || r.Message == "" {
			t.Errorf("%s: %+v %v, want %d %s", tt.name, r, ok, tt.status, tt.code)
		}
	}
	if _, ok := sdk.RefusalOf(errors.New("dial tcp: connection refused")); ok {
		t.Error("a transport error taken for the guard's refusal")
	}
}
