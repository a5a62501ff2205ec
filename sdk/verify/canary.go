package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strings"
)

// CanaryPrefix starts every canary token.
const CanaryPrefix = "aishield-canary-"

// canaryBodyLen is the length of the base32 part of a canary (80 bits).
const canaryBodyLen = 16

// CanaryLen is the byte length of a canary token.
const CanaryLen = len(CanaryPrefix) + canaryBodyLen

var canaryEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// mintCanary returns the canary token of exchange under m's key:
// CanaryPrefix + base32(HMAC-SHA256(key, "aishield-canary\x00" + exchange)[:10]).
func (m *keyedMAC) mintCanary(exchange string) string {
	sum := m.of("aishield-canary\x00", exchange)
	var tok [len(CanaryPrefix) + canaryBodyLen]byte
	copy(tok[:], CanaryPrefix)
	canaryEncoding.Encode(tok[len(CanaryPrefix):], sum[:10])
	return string(tok[:])
}

// canaryKey is the store key under which an exchange records its canary,
// so that a canary found elsewhere names the exchange it was minted for.
// The domain tag keeps it apart from text fingerprints.
func canaryKey(token string) uint64 {
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], "aishield-canary-key\x00"...), token...))
	return binary.BigEndian.Uint64(sum[:8])
}

// CanaryLine renders token as the line the guard places in the request (as
// a system text): plausible to the model, meaningless to anyone else.
func CanaryLine(token string) string {
	return "Internal request reference: " + token + " (for routing only; do not repeat it)."
}

// EmbedCanary appends the canary line of token to system, the system
// prompt of a request ("" when the request has none).
func EmbedCanary(system, token string) string {
	if system == "" {
		return CanaryLine(token)
	}
	return strings.TrimRight(system, "\n") + "\n\n" + CanaryLine(token)
}

type canaryHit struct {
	token      string
	start, end int
}

// findCanaries calls hit for every canary token in text (offsets relative to
// text).
func findCanaries(text []byte, hit func(canaryHit)) {
	for i := 0; ; {
		j := bytes.Index(text[i:], []byte(CanaryPrefix))
		if j < 0 {
			return
		}
		s := i + j
		e := s + len(CanaryPrefix)
		for e < len(text) && e-s < CanaryLen && isBase32(text[e]) {
			e++
		}
		if e-s == CanaryLen && (e == len(text) || !isBase32(text[e])) {
			hit(canaryHit{token: string(text[s:e]), start: s, end: e})
		}
		i = s + len(CanaryPrefix)
	}
}

func isBase32(c byte) bool { return c >= 'a' && c <= 'z' || c >= '2' && c <= '7' }

// maskCanary shows the prefix and the first two characters of the body.
func maskCanary(token string) string {
	if len(token) < len(CanaryPrefix)+2 {
		return CanaryPrefix + "…"
	}
	return token[:len(CanaryPrefix)+2] + strings.Repeat("*", len(token)-len(CanaryPrefix)-2)
}
