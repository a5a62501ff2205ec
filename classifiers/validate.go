package classifiers

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"math"
	"math/big"
	"math/bits"
	"net/netip"
	"sort"
	"strings"
)

// validators maps the names usable in CustomRule.Validator to checks over
// the matched text.
var validatorNames = []string{
	"luhn", "mod97", "iban", "us_ssn", "fr_nir", "fr_siren", "fr_siret", "uk_nino", "uk_nhs",
	"es_dni", "it_fiscal_code", "nl_bsn", "ip", "btc_address", "eth_address", "github_token", "jwt", "entropy",
}

// Validators lists the validator names a CustomRule may use.
func Validators() []string { return append([]string(nil), validatorNames...) }

// validatorFunc returns the check for name, or nil.
func validatorFunc(name string) func(string) bool {
	switch name {
	case "luhn":
		return func(v string) bool { d := onlyDigits(v); return len(d) >= 2 && luhn(d) }
	case "mod97":
		return func(v string) bool { d := onlyDigits(v); return len(d) >= 3 && mod97Digits(d) == 1 }
	case "iban":
		return func(v string) bool { return validIBAN(compactUpper(v)) }
	case "us_ssn":
		return func(v string) bool { return validSSN(onlyDigits(v)) }
	case "fr_nir":
		return func(v string) bool { return validNIR(compactUpper(v)) }
	case "fr_siren":
		return func(v string) bool { d := onlyDigits(v); return len(d) == 9 && luhn(d) }
	case "fr_siret":
		return func(v string) bool { return validSIRET(onlyDigits(v)) }
	case "uk_nino":
		return func(v string) bool { return validNINO(compactUpper(v)) }
	case "uk_nhs":
		return func(v string) bool { return validNHS(onlyDigits(v)) }
	case "es_dni":
		return func(v string) bool { return validDNI(compactUpper(v)) }
	case "it_fiscal_code":
		return func(v string) bool { return validCodiceFiscale(compactUpper(v)) }
	case "nl_bsn":
		return func(v string) bool { return validBSN(onlyDigits(v)) }
	case "ip":
		return func(v string) bool { _, err := netip.ParseAddr(v); return err == nil }
	case "btc_address":
		return func(v string) bool { return validBase58Check(v) || validBech32Address(v) }
	case "eth_address":
		return func(v string) bool { ok, _ := validEthAddress(v); return ok }
	case "github_token":
		return validGitHubToken[string]
	case "jwt":
		return validJWT
	case "entropy":
		return func(v string) bool { return shannon(v) >= 3.0 }
	}
	return nil
}

func onlyDigits(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func compactUpper(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
		}
	}
	return string(b)
}

// luhn checks the Luhn (mod 10) check digit of a digit string. It reads
// the digits in pairs from the right: the right one as it is, the left one
// doubled (luhnDoubled).
func luhn[T ~string | ~[]byte](d T) bool {
	sum := 0
	i := len(d) - 1
	for ; i > 0; i -= 2 {
		sum += int(d[i]-'0') + luhnDoubled[d[i-1]-'0']
	}
	if i == 0 {
		sum += int(d[0] - '0')
	}
	return sum%10 == 0
}

// luhnDoubled is the Luhn value of a doubled digit v (byte(c - '0') for
// any byte c, so every index is covered): 2v, less 9 when above 9.
var luhnDoubled = func() (t [256]int) {
	for v := range t {
		t[v] = 2 * v
		if t[v] > 9 {
			t[v] -= 9
		}
	}
	return t
}()

// mod97Digits returns the digit string modulo 97 (ISO 7064 MOD 97-10).
func mod97Digits(d string) int {
	r := 0
	for i := 0; i < len(d); i++ {
		r = (r*10 + int(d[i]-'0')) % 97
	}
	return r
}

// ibanLengths is the IBAN length per country (SWIFT IBAN registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
	"MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
	"NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
	"SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// validIBAN checks country, length and the mod 97 check digits of a compact
// upper-case IBAN.
func validIBAN[T ~string | ~[]byte](s T) bool {
	if len(s) < 15 || len(s) > 34 || !isUpper(s[0]) || !isUpper(s[1]) || !isDigit(s[2]) || !isDigit(s[3]) {
		return false
	}
	if ibanLengths[string(s[:2])] != len(s) {
		return false
	}
	// mod 97 of the value rotated by four characters, letters as 10..35.
	// The remainder is taken only when the next step could overflow 64
	// bits (r*100 + 35 needs r < 1.8e17), then once at the end: the same
	// value mod 97 as reducing after every character.
	var r uint64
	for k := 4; k < len(s)+4; k++ {
		i := k
		if i >= len(s) {
			i -= len(s)
		}
		c := s[i]
		if d := c - '0'; d < 10 {
			r = r*10 + uint64(d)
		} else if u := c - 'A'; u < 26 {
			r = r*100 + uint64(u) + 10
		} else {
			return false
		}
		if r >= 1<<56 {
			r %= 97
		}
	}
	return r%97 == 1
}

// validSSN applies the SSA rules: area not 000, 666 or 900-999; group not
// 00; serial not 0000.
func validSSN[T ~string | ~[]byte](d T) bool {
	if len(d) != 9 {
		return false
	}
	area := d[0] != '0' || d[1] != '0' || d[2] != '0'
	area = area && !(d[0] == '6' && d[1] == '6' && d[2] == '6') && d[0] != '9'
	group := d[3] != '0' || d[4] != '0'
	serial := d[5] != '0' || d[6] != '0' || d[7] != '0' || d[8] != '0'
	return area && group && serial
}

// validNIR checks a French NIR (numéro de sécurité sociale): sex digit,
// month, and the key 97 - (number mod 97), with Corsica's 2A/2B counted as
// 19/18.
func validNIR[T ~string | ~[]byte](s T) bool {
	if len(s) != 15 || (s[0] != '1' && s[0] != '2') {
		return false
	}
	sub := uint64(0)
	for i := 0; i < 15; i++ {
		if isDigit(s[i]) {
			continue
		}
		// Corsica: department 2A counts as 19 minus 1000000, 2B as 18
		// minus 2000000.
		if i == 6 && s[5] == '2' && (s[6] == 'A' || s[6] == 'B') {
			continue
		}
		return false
	}
	body := uint64(0)
	for i := 0; i < 13; i++ {
		d := uint64(s[i] - '0')
		switch {
		case i == 5 && s[6] == 'A':
			d = 1
		case i == 6 && s[6] == 'A':
			d, sub = 9, 1000000
		case i == 5 && s[6] == 'B':
			d = 1
		case i == 6 && s[6] == 'B':
			d, sub = 8, 2000000
		}
		body = body*10 + d
	}
	month := int(s[3]-'0')*10 + int(s[4]-'0')
	if month == 0 || (month > 12 && month < 20) || month > 99 {
		return false
	}
	m := (body - sub) % 97
	key := uint64(s[13]-'0')*10 + uint64(s[14]-'0')
	return key == 97-m
}

// validSIRET checks the Luhn key of a SIRET (14 digits), including La
// Poste's establishments (SIREN 356000000), whose digits sum to a multiple
// of 5 instead.
func validSIRET[T ~string | ~[]byte](d T) bool {
	if len(d) != 14 {
		return false
	}
	if string(d[:9]) == "356000000" {
		sum := 0
		for i := 0; i < 14; i++ {
			sum += int(d[i] - '0')
		}
		return sum%5 == 0
	}
	return luhn(d) && luhn(d[:9])
}

// validNINO checks a UK National Insurance number's prefix letters and
// suffix.
func validNINO(s string) bool {
	if len(s) != 9 {
		return false
	}
	a, b := s[0], s[1]
	if strings.IndexByte("DFIQUV", a) >= 0 || strings.IndexByte("DFIQUVO", b) >= 0 || !isUpper(a) || !isUpper(b) {
		return false
	}
	switch s[:2] {
	case "BG", "GB", "NK", "KN", "TN", "NT", "ZZ":
		return false
	}
	for i := 2; i < 8; i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s[8] >= 'A' && s[8] <= 'D'
}

// validNHS checks the mod 11 check digit of an NHS number.
func validNHS[T ~string | ~[]byte](d T) bool {
	if len(d) != 10 {
		return false
	}
	sum := 0
	for i := 0; i < 9; i++ {
		sum += int(d[i]-'0') * (10 - i)
	}
	check := 11 - sum%11
	if check == 11 {
		check = 0
	}
	return check != 10 && check == int(d[9]-'0')
}

const dniLetters = "TRWAGMYFPDXBNJZSQVHLCKE"

// validDNI checks a Spanish DNI (8 digits + letter) or NIE (X/Y/Z + 7
// digits + letter).
func validDNI(s string) bool {
	if len(s) != 9 {
		return false
	}
	num := s[:8]
	switch s[0] {
	case 'X':
		num = "0" + s[1:8]
	case 'Y':
		num = "1" + s[1:8]
	case 'Z':
		num = "2" + s[1:8]
	}
	n := 0
	for i := 0; i < 8; i++ {
		if !isDigit(num[i]) {
			return false
		}
		n = n*10 + int(num[i]-'0')
	}
	return dniLetters[n%23] == s[8]
}

// validCIF checks a Spanish CIF: an entity letter (ABCDEFGHJNPQRSUVW),
// seven digits and a control character. With the digits' even positions
// summed and the odd positions doubled and their digits summed, the
// control digit is (10 - sum mod 10) mod 10 and the control letter the
// same index in "JABCDEFGHI"; entities A, B, E and H take the digit, N,
// P, Q, R, S and W the letter, the others either (Orden EHA/451/2008).
func validCIF[T ~string | ~[]byte](v T) bool {
	if len(v) != 9 || !strings.Contains("ABCDEFGHJNPQRSUVW", string(v[0])) {
		return false
	}
	sum := 0
	for i := 1; i <= 7; i++ {
		x := int(v[i] - '0')
		if x > 9 {
			return false
		}
		if i%2 == 1 {
			x *= 2
			x = x/10 + x%10
		}
		sum += x
	}
	ctl := (10 - sum%10) % 10
	digit, letter := v[8] == byte('0'+ctl), v[8] == "JABCDEFGHI"[ctl]
	switch v[0] {
	case 'A', 'B', 'E', 'H':
		return digit
	case 'N', 'P', 'Q', 'R', 'S', 'W':
		return letter
	}
	return digit || letter
}

// Odd-position values of the codice fiscale check character, for 0-9 and A-Z.
var cfOdd = [36]int{1, 0, 5, 7, 9, 13, 15, 17, 19, 21,
	1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23}

// validCodiceFiscale checks an Italian fiscal code's shape and its check
// character.
func validCodiceFiscale(s string) bool {
	if len(s) != 16 {
		return false
	}
	// Shape: 6 letters, 2 digits (or omocodia letters), month letter, 2, letter, 3, letter.
	for _, i := range []int{0, 1, 2, 3, 4, 5, 8, 11, 15} {
		if !isUpper(s[i]) {
			return false
		}
	}
	if strings.IndexByte("ABCDEHLMPRST", s[8]) < 0 {
		return false
	}
	sum := 0
	for i := 0; i < 15; i++ {
		c := s[i]
		var k int
		switch {
		case isDigit(c):
			k = int(c - '0')
		case isUpper(c):
			k = 10 + int(c-'A')
		default:
			return false
		}
		if i%2 == 0 { // odd position (1-based)
			sum += cfOdd[k]
		} else if k < 10 {
			sum += k
		} else {
			sum += k - 10
		}
	}
	return s[15] == byte('A'+sum%26)
}

// validBSN applies the Dutch "11-proof" to a BSN.
func validBSN[T ~string | ~[]byte](d T) bool {
	if len(d) != 9 || string(d) == "000000000" {
		return false
	}
	sum := 0
	for i := 0; i < 8; i++ {
		sum += int(d[i]-'0') * (9 - i)
	}
	sum -= int(d[8] - '0')
	return sum%11 == 0
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// validBase58Check decodes a Bitcoin base58 address and checks its
// double-SHA256 checksum and version byte (0x00 P2PKH, 0x05 P2SH).
func validBase58Check(s string) bool {
	if len(s) < 26 || len(s) > 35 {
		return false
	}
	n := new(big.Int)
	b58 := big.NewInt(58)
	for i := 0; i < len(s); i++ {
		k := strings.IndexByte(base58Alphabet, s[i])
		if k < 0 {
			return false
		}
		n.Mul(n, b58)
		n.Add(n, big.NewInt(int64(k)))
	}
	raw := n.Bytes()
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	full := make([]byte, zeros+len(raw))
	copy(full[zeros:], raw)
	if len(full) != 25 || (full[0] != 0x00 && full[0] != 0x05) {
		return false
	}
	h1 := sha256.Sum256(full[:21])
	h2 := sha256.Sum256(h1[:])
	return string(h2[:4]) == string(full[21:])
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		b := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := 0; i < 5; i++ {
			if (b>>i)&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

// validBech32Address checks a segwit address (bc1…, tb1…): bech32 checksum
// for witness version 0, bech32m for versions 1-16 (BIP 173, BIP 350), and
// the program length.
func validBech32Address(s string) bool {
	if len(s) < 14 || len(s) > 90 {
		return false
	}
	low := strings.ToLower(s)
	if low != s && strings.ToUpper(s) != s {
		return false
	}
	pos := strings.LastIndexByte(low, '1')
	if pos < 1 || pos+7 > len(low) {
		return false
	}
	hrp := low[:pos]
	if hrp != "bc" && hrp != "tb" {
		return false
	}
	data := make([]byte, 0, len(low)-pos-1)
	for i := pos + 1; i < len(low); i++ {
		k := strings.IndexByte(bech32Charset, low[i])
		if k < 0 {
			return false
		}
		data = append(data, byte(k))
	}
	vals := make([]byte, 0, len(hrp)*2+1+len(data))
	for i := 0; i < len(hrp); i++ {
		vals = append(vals, hrp[i]>>5)
	}
	vals = append(vals, 0)
	for i := 0; i < len(hrp); i++ {
		vals = append(vals, hrp[i]&31)
	}
	vals = append(vals, data...)
	pm := bech32Polymod(vals)
	ver := data[0]
	if ver > 16 {
		return false
	}
	if (ver == 0 && pm != 1) || (ver != 0 && pm != 0x2bc830a3) {
		return false
	}
	// program: convert 5-bit groups (without version and checksum) to bytes
	prog := data[1 : len(data)-6]
	bits := len(prog) * 5
	plen := bits / 8
	if bits%8 >= 5 {
		return false
	}
	if plen < 2 || plen > 40 || (ver == 0 && plen != 20 && plen != 32) {
		return false
	}
	return true
}

// validEthAddress checks an Ethereum address "0x" + 40 hex digits. Mixed
// case must satisfy the EIP-55 checksum; checked reports whether it did
// (single-case addresses carry no checksum).
func validEthAddress(s string) (ok, checked bool) {
	if len(s) != 42 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false, false
	}
	hexPart := s[2:]
	hasUpper, hasLower := false, false
	for i := 0; i < 40; i++ {
		c := hexPart[i]
		if !isHex(c) {
			return false, false
		}
		if c >= 'A' && c <= 'F' {
			hasUpper = true
		}
		if c >= 'a' && c <= 'f' {
			hasLower = true
		}
	}
	if !(hasUpper && hasLower) {
		return true, false
	}
	h := keccak256([]byte(strings.ToLower(hexPart)))
	for i := 0; i < 40; i++ {
		c := hexPart[i]
		if isDigit(c) {
			continue
		}
		nib := h[i/2]
		if i%2 == 0 {
			nib >>= 4
		}
		upper := nib&0xf >= 8
		if upper != (c >= 'A' && c <= 'F') {
			return false, true
		}
	}
	return true, true
}

const base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// base62CRC32 encodes the CRC32 (IEEE) of s in 6 base62 digits, as GitHub
// and npm tokens carry it.
func base62CRC32(s string) string {
	out := base62CRC32Array(s)
	return string(out[:])
}

// base62CRC32Array is base62CRC32 without allocating.
func base62CRC32Array[T ~string | ~[]byte](s T) [6]byte {
	n := crc32.ChecksumIEEE([]byte(s))
	var out [6]byte
	for i := 5; i >= 0; i-- {
		out[i] = base62Alphabet[n%62]
		n /= 62
	}
	return out
}

// validGitHubToken checks the checksum of GitHub's token formats introduced
// in 2021 (ghp_, gho_, ghu_, ghs_, ghr_ + 30 random + 6 checksum characters):
// the last six characters are the base62 CRC32 of the random part.
func validGitHubToken[T ~string | ~[]byte](t T) bool {
	i := -1
	for k := 0; k < len(t); k++ {
		if t[k] == '_' {
			i = k
			break
		}
	}
	if i < 0 || len(t)-i-1 != 36 {
		return false
	}
	body := t[i+1:]
	for j := 0; j < len(body); j++ {
		if !isAlnum(body[j]) {
			return false
		}
	}
	sum := base62CRC32Array(body[:30])
	return string(sum[:]) == string(body[30:])
}

// validJWT decodes a JWT's header: base64url JSON with an "alg" member, and
// a payload that is base64url JSON too.
func validJWT(t string) bool {
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return false
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h map[string]any
	if json.Unmarshal(hdr, &h) != nil {
		return false
	}
	if alg, ok := h["alg"].(string); !ok || alg == "" {
		return false
	}
	pl, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var p any
	return json.Unmarshal(pl, &p) == nil
}

// shannon returns the Shannon entropy of s in bits per byte.
func shannon[T ~string | ~[]byte](s T) float64 {
	if len(s) == 0 {
		return 0
	}
	if len(s) > 0xFFFF {
		return shannonLong(s)
	}
	var counts [256]uint16
	var seen [256]byte // distinct bytes, in order of appearance
	nd := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if counts[c] == 0 {
			seen[nd] = c
			nd++
		}
		counts[c]++
	}
	// Sum in byte order, as a loop over counts would (the floating-point
	// result depends on the order).
	ds := seen[:nd]
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j-1] > ds[j]; j-- {
			ds[j-1], ds[j] = ds[j], ds[j-1]
		}
	}
	var e float64
	n := float64(len(s))
	for _, c := range ds {
		p := float64(counts[c]) / n
		e -= p * math.Log2(p)
	}
	return e
}

// shannonLong is shannon for inputs too long for 16-bit counts.
func shannonLong[T ~string | ~[]byte](s T) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var e float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// sortedCopy returns a sorted copy of ss.
func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

// asciiLowerBytes is asciiLower for a byte slice.
func asciiLowerBytes(dst, s []byte) []byte {
	for _, c := range s {
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// entropyTable holds p·log2(p) for p = c/n, 1 <= c <= n <= entropyMaxLen,
// so the entropy of a short value costs table loads instead of logarithms.
// It is built once per Scanner and only read afterwards.
type entropyTable []float64

// entropyMaxLen is the longest value entropyTable covers (secret.generic
// reads values of at most 128 bytes).
const entropyMaxLen = 128

func newEntropyTable() entropyTable {
	t := make(entropyTable, entropyMaxLen*(entropyMaxLen+1)/2)
	for n := 1; n <= entropyMaxLen; n++ {
		for c := 1; c <= n; c++ {
			p := float64(c) / float64(n)
			t[n*(n-1)/2+c-1] = p * math.Log2(p)
		}
	}
	return t
}

// of returns shannon(v), bit for bit: the same terms summed in the same
// (byte) order.
func (t entropyTable) of(v []byte) float64 {
	n := len(v)
	if n == 0 || n > entropyMaxLen {
		return shannon(v)
	}
	var counts [256]uint8
	var seen [4]uint64 // bitmap of the bytes present
	for _, c := range v {
		counts[c]++
		seen[c>>6] |= 1 << (c & 63)
	}
	row := t[n*(n-1)/2:]
	var e float64
	for w, m := range seen {
		for ; m != 0; m &= m - 1 {
			c := w<<6 | bits.TrailingZeros64(m)
			e -= row[int(counts[c])-1]
		}
	}
	return e
}
