package classifiers

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Generators of check-digit-valid fake values, so tests never carry real
// people's data and never depend on hand-computed check digits.

func luhnComplete(body string) string {
	for d := 0; d < 10; d++ {
		if s := body + strconv.Itoa(d); luhn(s) {
			return s
		}
	}
	panic("unreachable")
}

func makeIBAN(country, bban string) string {
	for cd := 2; cd < 99; cd++ {
		s := fmt.Sprintf("%s%02d%s", country, cd, bban)
		if validIBAN(s) {
			return s
		}
	}
	panic("no IBAN")
}

func groups4(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[i:min(i+4, len(s))])
	}
	return b.String()
}

func makeNIR(body13 string) string {
	n, _ := new(big.Int).SetString(body13, 10)
	m := new(big.Int).Mod(n, big.NewInt(97)).Int64()
	return fmt.Sprintf("%s%02d", body13, 97-m)
}

func makeGitHub(prefix, random30 string) string {
	return prefix + "_" + random30 + base62CRC32(random30)
}

func makeNHS(body9 string) string {
	for d := 0; d < 10; d++ {
		if s := body9 + strconv.Itoa(d); validNHS(s) {
			return s
		}
	}
	return ""
}

func makeBSN(body8 string) string {
	for d := 0; d < 10; d++ {
		if s := body8 + strconv.Itoa(d); validBSN(s) {
			return s
		}
	}
	return ""
}

func makeDNI(n int) string { return fmt.Sprintf("%08d%c", n, dniLetters[n%23]) }

func makeCF(body15 string) string {
	for c := 'A'; c <= 'Z'; c++ {
		if s := body15 + string(c); validCodiceFiscale(s) {
			return s
		}
	}
	return ""
}

func makeBase58Check(version byte, payload20 []byte) string {
	raw := append([]byte{version}, payload20...)
	h1 := sha256.Sum256(raw)
	h2 := sha256.Sum256(h1[:])
	raw = append(raw, h2[:4]...)
	n := new(big.Int).SetBytes(raw)
	var out []byte
	b58 := big.NewInt(58)
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, b58, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for _, b := range raw {
		if b != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

func makeEIP55(hex40 string) string {
	h := keccak256([]byte(hex40))
	out := []byte(hex40)
	for i := range out {
		nib := h[i/2]
		if i%2 == 0 {
			nib >>= 4
		}
		if out[i] >= 'a' && nib&0xf >= 8 {
			out[i] -= 32
		}
	}
	return "0x" + string(out)
}
func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
