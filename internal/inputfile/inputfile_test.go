package inputfile

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadUpTo: an input read into a buffer of its stated size gives all of
// it whether it is as large as stated, has grown or shrunk since, or goes
// past the limit (limit bytes then, so the caller sees it is too large);
// a read error is returned.
func TestReadUpTo(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300) // 4,800 bytes
	for _, c := range []struct {
		name        string
		n           int
		size, limit int64
		want        int
	}{
		{"as stated", 4800, 4800, 1 << 20, 4800},
		{"grown since", 4800, 100, 1 << 20, 4800},
		{"shrunk since", 1000, 4800, 1 << 20, 1000},
		{"unknown size", 4800, 0, 1 << 20, 4800},
		{"empty", 0, 0, 1 << 20, 0},
		{"past the limit", 4800, 4800, 4001, 4001},
	} {
		got, err := ReadUpTo(bytes.NewReader(data[:c.n]), c.size, c.limit)
		if err != nil || !bytes.Equal(got, data[:c.want]) {
			t.Errorf("%s: %d bytes, %v; want %d", c.name, len(got), err, c.want)
		}
	}
	boom := errors.New("disk gone")
	if _, err := ReadUpTo(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), 4800, 1<<20); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}
