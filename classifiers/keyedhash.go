package classifiers

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
)

// keyedHash computes HMAC-SHA256 under one key for many short values into a
// reused buffer. crypto/hmac keeps the padded key states marshalled after
// its first Reset, so a value costs the two SHA-256 compressions and no
// allocation.
//
// Copying crypto/sha256's unexported digest state with reflect would save
// about 30 ns a value; a security tool does not depend on the layout of
// another package's internals.
//
// A keyedHash is not safe for concurrent use; each scan state has its own.
type keyedHash struct {
	mac hash.Hash
	sum [sha256.Size]byte
}

func newKeyedHash(key []byte) *keyedHash {
	return &keyedHash{mac: hmac.New(sha256.New, key)}
}

// Sum returns the HMAC-SHA256 of v. The result is k's own buffer, valid
// until the next call.
func (k *keyedHash) Sum(v []byte) []byte {
	k.mac.Reset()
	k.mac.Write(v)
	return k.mac.Sum(k.sum[:0])
}
