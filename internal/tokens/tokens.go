// Package tokens counts the tokens of request texts, fast first and exactly
// only when it matters.
//
// [Bounds] brackets the token count of a text in one linear pass without a
// vocabulary: the byte length is an upper bound (every token of a byte-level
// BPE vocabulary holds at least one byte) and the number of
// pre-tokenization pieces (runs of letters, groups of up to three digits,
// runs of punctuation) is a lower bound (the BPE split regexes of the
// tiktoken encodings never join two such pieces into one token). A limit
// outside the bracket is decided without tokenizing; only a limit inside it
// pays for the exact count with github.com/tiktoken-go/tokenizer.
//
// The exact count uses an OpenAI encoding (o200k_base by default): for other
// providers it is the reference count, not the provider's own. It is the
// library's count; for cl100k_base and o200k_base text of printable ASCII,
// tabs and line breaks it is computed without the library's split regex
// (split.go), about ten times faster. [Counter.Encode] gives the token IDs
// themselves, the library's, by the same path.
package tokens

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Per-text and per-request overheads added to every count, covering the
// role and separator tokens chat formats add around each message.
const (
	PerText    = 4
	PerRequest = 3
)

// Character classes of Bounds.
const (
	clNone   = iota // spaces and control characters
	clLetter        // letters, marks, symbols, invalid bytes
	clDigit
	clPunct
	clApos  // the apostrophe, transparent
	clMulti // the first byte of a multi-byte sequence: decode it
)

// asciiClass classifies every byte value; bytes from 0x80 are clMulti.
var asciiClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == '\'':
			t[c] = clApos
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			t[c] = clLetter
		case c >= '0' && c <= '9':
			t[c] = clDigit
		case c <= ' ' || c == 0x7f:
			t[c] = clNone
		case c < utf8.RuneSelf:
			t[c] = clPunct
		default:
			t[c] = clMulti
		}
	}
	return t
}()

// Bounds returns a lower and an upper bound of the token count of s.
func Bounds(s string) (lower, upper int) {
	upper = len(s)
	state, digits, punctLen := clNone, 0, 0
	for i := 0; i < len(s); {
		class := int(asciiClass[s[i]])
		size := 1
		switch class {
		case clApos:
			// The apostrophe is transparent: o200k_base keeps contractions
			// ("n't") in the word's piece, and it joins punctuation runs.
			i++
			continue
		case clMulti:
			r, n := utf8.DecodeRuneInString(s[i:])
			size = n
			switch {
			case unicode.IsSpace(r) || unicode.Is(unicode.C, r):
				class = clNone
			case unicode.IsDigit(r):
				class = clDigit
			default:
				// Letters, marks, symbols and invalid bytes count as letters:
				// merging never makes the lower bound unsafe.
				class = clLetter
			}
		}
		if state == clPunct && class != clPunct {
			// A single punctuation character right before a letter run
			// joins that run's piece; anything else is a piece of its own.
			if punctLen >= 2 || (punctLen == 1 && class != clLetter) {
				lower++
			}
			punctLen = 0
		}
		if state == clDigit && class != clDigit {
			lower += (digits + 2) / 3
			digits = 0
		}
		i += size
		switch class {
		case clLetter, clNone:
			if class == clLetter && state != clLetter {
				lower++
			}
			// Inside a run of ASCII letters (or of spaces) nothing changes
			// until another class shows up: skip the run.
			for i < len(s) {
				if k := asciiClass[s[i]]; k != uint8(class) && k != clApos {
					break
				}
				i++
			}
		case clDigit:
			digits++
		case clPunct:
			punctLen++
		}
		state = class
	}
	if state == clPunct && punctLen >= 1 {
		lower++
	}
	if state == clDigit {
		lower += (digits + 2) / 3
	}
	return lower, upper
}

// Count is the token count of a request.
type Count struct {
	// Tokens is the exact count when Exact, else Lower (a count the request
	// is known to reach, and close to the real count for prose).
	Tokens int
	Exact  bool
	// Lower and Upper bracket the count (equal to Tokens when Exact).
	Lower, Upper int
	// Over reports that the count exceeds the limit given to Check.
	Over bool
}

// Counter counts tokens with one encoding. The zero value uses o200k_base.
// A Counter is safe for concurrent use; the vocabulary is loaded on the
// first exact count.
type Counter struct {
	// Encoding is a tiktoken encoding name ("o200k_base", "cl100k_base",
	// ...); "" means o200k_base.
	Encoding string

	once  sync.Once
	codec tokenizer.Codec
	vocab *vocab // the fast path's vocabulary; nil: the library alone
	o200k bool   // the fast path splits as o200k_base, else cl100k_base
	err   error
}

func (c *Counter) load() (tokenizer.Codec, error) {
	c.once.Do(func() {
		enc := tokenizer.Encoding(c.Encoding)
		if enc == "" {
			enc = tokenizer.O200kBase
		}
		c.codec, c.err = tokenizer.Get(enc)
		if c.err != nil {
			c.err = fmt.Errorf("tokens: encoding %q: %w", c.Encoding, c.err)
			return
		}
		if load, ok := vocabs[enc]; ok {
			c.vocab, c.err = load()
			c.o200k = enc == tokenizer.O200kBase
			if c.err != nil {
				c.err = fmt.Errorf("tokens: encoding %q: %w", c.Encoding, c.err)
			}
		}
	})
	return c.codec, c.err
}

// Exact returns the exact token count of s: the count of the library
// (github.com/tiktoken-go/tokenizer), computed without its split regex for
// cl100k_base and o200k_base text of printable ASCII, tabs and line breaks.
func (c *Counter) Exact(s string) (int, error) {
	codec, err := c.load()
	if err != nil {
		return 0, err
	}
	if c.vocab != nil {
		if n, ok, err := exactFast(codec, c.vocab, c.o200k, s); ok {
			return n, err
		}
	}
	return codec.Count(s)
}

// Encode appends the token IDs of s to dst and returns the extended slice:
// the IDs of the library's Encode (github.com/tiktoken-go/tokenizer),
// computed without its split regex for cl100k_base and o200k_base text of
// printable ASCII, tabs and line breaks.
func (c *Counter) Encode(dst []uint32, s string) ([]uint32, error) {
	codec, err := c.load()
	if err != nil {
		return dst, err
	}
	if c.vocab != nil {
		if out, ok, err := encodeFast(dst, codec, c.vocab, c.o200k, s); ok {
			return out, err
		}
	}
	ids, _, err := codec.Encode(s)
	for _, id := range ids {
		dst = append(dst, uint32(id))
	}
	return dst, err
}

// Check counts the tokens of a request made of texts against limit (0 or
// less means no limit). The exact count runs only when the limit falls
// between the fast bounds, and stops as soon as the limit is passed.
func (c *Counter) Check(texts []string, limit int) (Count, error) {
	lower, upper := PerRequest, PerRequest
	for _, t := range texts {
		l, u := Bounds(t)
		lower += l + PerText
		upper += u + PerText
	}
	res := Count{Tokens: lower, Lower: lower, Upper: upper}
	if limit <= 0 || upper <= limit {
		return res, nil
	}
	if lower > limit {
		res.Over = true
		return res, nil
	}
	n := PerRequest
	for _, t := range texts {
		k, err := c.Exact(t)
		if err != nil {
			return res, err
		}
		n += k + PerText
		if n > limit {
			// Known to be over: report what was counted, as a lower bound.
			res.Over = true
			res.Tokens = max(n, lower)
			res.Lower = res.Tokens
			return res, nil
		}
	}
	return Count{Tokens: n, Exact: true, Lower: n, Upper: n}, nil
}
