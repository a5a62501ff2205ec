package classifiers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"hash"
	"reflect"
)

// keyedHash computes HMAC-SHA256 under one key for many short values,
// with the same output as hmac.New(sha256.New, key) (TestKeyedHash).
//
// The SHA-256 states after the padded key blocks (K0⊕ipad and K0⊕opad, RFC
// 2104) are computed once and copied into the working digests before each
// value (reflect.Value.Set of the digest struct). A value of at most 55
// bytes fits with its padding in one block: the block is padded here and
// written whole, so the digest compresses it at once, and the resulting
// chaining value is read from the digest's marshalled state (AppendBinary:
// a 4-byte magic, then the state words big-endian, which after the last
// block are the hash). That skips Sum's copy of the digest and its padding
// writes, for the inner and the outer hash. Longer values take Write and
// Sum. newKeyedHash checks the fast path against crypto/hmac on probe
// values and falls back to crypto/hmac if the digest is not a pointer to a
// struct, cannot append its state, or disagrees.
//
// A keyedHash is not safe for concurrent use; each scan state has its own.
type keyedHash struct {
	in, out       hash.Hash
	inApp, outApp encoding.BinaryAppender
	inV, outV     reflect.Value // *in and *out, settable
	in0, out0     reflect.Value // states after K0⊕ipad and K0⊕opad
	fallback      hash.Hash     // crypto/hmac when states cannot be copied
	state         [128]byte     // AppendBinary output
	blk           [64]byte      // the padded block written
	sum           [sha256.Size]byte
}

func newKeyedHash(key []byte) *keyedHash {
	k := &keyedHash{in: sha256.New(), out: sha256.New()}
	if !k.init(key) {
		k.fallback = hmac.New(sha256.New, key)
	}
	return k
}

func (k *keyedHash) init(key []byte) bool {
	pv, po := reflect.ValueOf(k.in), reflect.ValueOf(k.out)
	if pv.Kind() != reflect.Pointer || pv.Elem().Kind() != reflect.Struct || !pv.Elem().CanSet() ||
		po.Type() != pv.Type() {
		return false
	}
	var ok1, ok2 bool
	k.inApp, ok1 = k.in.(encoding.BinaryAppender)
	k.outApp, ok2 = k.out.(encoding.BinaryAppender)
	if !ok1 || !ok2 {
		return false
	}
	var k0 [64]byte // sha256's block size
	if len(key) > len(k0) {
		s := sha256.Sum256(key)
		copy(k0[:], s[:])
	} else {
		copy(k0[:], key)
	}
	var pad [64]byte
	for i, b := range k0 {
		pad[i] = b ^ 0x36
	}
	k.in.Write(pad[:])
	for i, b := range k0 {
		pad[i] = b ^ 0x5c
	}
	k.out.Write(pad[:])
	k.inV, k.outV = pv.Elem(), po.Elem()
	k.in0 = reflect.New(k.inV.Type()).Elem()
	k.in0.Set(k.inV)
	k.out0 = reflect.New(k.outV.Type()).Elem()
	k.out0.Set(k.outV)
	for _, probe := range []string{"", "probe", "0123456789012345678901234567890123456789012345678901234"} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(probe))
		if !bytes.Equal(k.Sum([]byte(probe)), m.Sum(nil)) {
			return false
		}
	}
	return true
}

// Sum returns the HMAC-SHA256 of v. The result is k's own buffer, valid
// until the next call.
func (k *keyedHash) Sum(v []byte) []byte {
	if k.fallback != nil {
		k.fallback.Reset()
		k.fallback.Write(v)
		return k.fallback.Sum(k.sum[:0])
	}
	k.inV.Set(k.in0)
	if len(v) > 55 {
		k.in.Write(v)
		k.in.Sum(k.sum[:0])
	} else {
		blk := &k.blk
		*blk = [64]byte{}
		copy(blk[:], v)
		blk[len(v)] = 0x80
		binary.BigEndian.PutUint64(blk[56:], uint64(64+len(v))*8)
		k.in.Write(blk[:])
		st, _ := k.inApp.AppendBinary(k.state[:0])
		copy(k.sum[:], st[4:4+sha256.Size])
	}
	k.outV.Set(k.out0)
	blk := &k.blk
	*blk = [64]byte{}
	copy(blk[:], k.sum[:])
	blk[sha256.Size] = 0x80
	binary.BigEndian.PutUint64(blk[56:], (64+sha256.Size)*8)
	k.out.Write(blk[:])
	st, _ := k.outApp.AppendBinary(k.state[:0])
	copy(k.sum[:], st[4:4+sha256.Size])
	return k.sum[:]
}
