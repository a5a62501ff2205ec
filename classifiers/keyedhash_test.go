package classifiers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKeyedHash(t *testing.T) {
	keys := [][]byte{nil, []byte("k"), bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 64),
		bytes.Repeat([]byte{3}, 65), []byte(strings.Repeat("long key ", 30))}
	values := []string{"", "a", "alice@example.com", strings.Repeat("x", 55), strings.Repeat("y", 56),
		strings.Repeat("z", 64), strings.Repeat("w", 200), "+33612345678"}
	for ki, key := range keys {
		k := newKeyedHash(key)
		for round := 0; round < 2; round++ { // states restored between values
			for _, v := range values {
				m := hmac.New(sha256.New, key)
				m.Write([]byte(v))
				want := m.Sum(nil)
				if got := k.Sum([]byte(v)); !bytes.Equal(got, want) {
					t.Errorf("key %d, value of %d bytes: %x, want %x", ki, len(v), got, want)
				}
			}
		}
	}
}

func BenchmarkKeyedHash(b *testing.B) {
	v := []byte("alice.smith@example.com")
	b.Run("keyed", func(b *testing.B) {
		k := newKeyedHash([]byte("0123456789abcdef0123456789abcdef"))
		b.ReportAllocs()
		for b.Loop() {
			k.Sum(v)
		}
	})
	b.Run("hmac", func(b *testing.B) {
		m := hmac.New(sha256.New, []byte("0123456789abcdef0123456789abcdef"))
		var sum [32]byte
		b.ReportAllocs()
		for b.Loop() {
			m.Reset()
			m.Write(v)
			m.Sum(sum[:0])
		}
	})
}

func TestAppendHexMatchesEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for n := 0; n < 40; n++ {
		for k := 0; k < 200; k++ {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(r.IntN(256))
			}
			pre := []byte("x")
			if got, want := string(appendHex(pre, src)), "x"+hex.EncodeToString(src); got != want {
				t.Fatalf("appendHex(%x) = %q, want %q", src, got, want)
			}
		}
	}
	for b := 0; b < 256; b++ {
		src := []byte{byte(b), byte(255 - b), byte(b * 7), byte(b ^ 0x5a)}
		if got, want := string(appendHex(nil, src)), hex.EncodeToString(src); got != want {
			t.Fatalf("appendHex(%x) = %q, want %q", src, got, want)
		}
	}
}
