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
	t.Parallel()
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
	t.Parallel()
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

// TestKeyID: scanners with the same key have the same KeyID, other keys
// another, and the KeyID holds nothing of the key.
func TestKeyID(t *testing.T) {
	t.Parallel()
	mk := func(key string) *Scanner {
		s, err := New(Options{HashKey: []byte(key), Detectors: []string{"pii.email"}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := mk("key one"), mk("key one"), mk("key two")
	if a.KeyID() != b.KeyID() || a.KeyID() == c.KeyID() || len(a.KeyID()) != 16 {
		t.Errorf("KeyIDs %q %q %q", a.KeyID(), b.KeyID(), c.KeyID())
	}
	r1, _ := New(Options{})
	r2, _ := New(Options{})
	if r1.KeyID() == r2.KeyID() {
		t.Error("two random keys have one KeyID")
	}
	if strings.Contains(a.KeyID(), hex.EncodeToString([]byte("key one"))[:8]) {
		t.Error("KeyID shows the key")
	}
}
