package quarantine

import (
	"strings"
	"testing"
)

// FuzzDecodeState: whatever a Redis value holds (written by another
// version, or by someone who can reach the server), decoding it returns a
// state or an error that names no content, and never panics.
func FuzzDecodeState(f *testing.F) {
	f.Add("0\n1\n{\"destination\":\"openai\",\"since\":\"2026-03-02T09:00:00Z\",\"signs\":{\"dropped_prompt\":1},\"count\":1}")
	f.Add("1772442000000\n3\n{\"destination\":\"x\",\"since\":\"2026-03-02T09:00:00Z\",\"until\":\"2026-03-02T10:00:00Z\",\"signs\":{}}")
	f.Add("not a state")
	f.Add("0\n{")
	f.Add("0\n-1\n{}")
	f.Fuzz(func(t *testing.T, v string) {
		st, err := decodeState(v)
		if err != nil {
			if strings.Contains(err.Error(), v) && len(v) > 8 {
				t.Errorf("the error quotes the value: %v", err)
			}
			return
		}
		_ = st.Active(st.Since)
	})
}
