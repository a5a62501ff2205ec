package traffic

import (
	"fmt"
	"hash/crc32"
	"math/big"
	"math/rand/v2"
	"strings"
)

// gen makes fictional but check-digit-valid sensitive values from a seeded
// PRNG: the demo's documents look real to the classifiers, yet belong to
// nobody. It avoids every range the classifiers treat as reserved for
// documentation (RFC 2606 domains, fictional phone ranges, published test
// card numbers and example keys).
type gen struct{ r *rand.Rand }

func newGen(seed uint64, stream uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^stream))}
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + g.r.IntN(10))
	}
	return string(b)
}

func (g *gen) chars(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

var firstNames = []string{"Amelie", "Bastien", "Chloe", "Damien", "Elodie", "Farid", "Gaelle", "Hugo", "Ines",
	"Julien", "Karima", "Lucas", "Manon", "Nathan", "Oceane", "Pierre", "Quentin", "Rania", "Sofia", "Thomas",
	"Ulysse", "Valentin", "Yasmine", "Zoe", "Margaret", "Oliver", "Priya", "Samuel", "Ingrid", "Tobias"}

var lastNames = []string{"Arnaud", "Benali", "Carpentier", "Delacroix", "Etienne", "Fontaine", "Garnier", "Hoarau",
	"Imbert", "Jacquet", "Kessler", "Lemaire", "Marchand", "Nicolas", "Olivier", "Perrin", "Renaud", "Sauvage",
	"Tessier", "Vasseur", "Whitcombe", "Lindqvist", "Okafor", "Brennan", "Castellanos", "Moreau"}

// person is a fictional individual.
type person struct{ First, Last string }

func (p person) Name() string { return p.First + " " + p.Last }

func (g *gen) person() person { return person{g.pick(firstNames), g.pick(lastNames)} }

// email is first.last@domain, lower-cased. domain must not be reserved.
func (g *gen) email(p person, domain string) string {
	return strings.ToLower(p.First + "." + p.Last + "@" + domain)
}

// phoneFR is a French mobile number in international format. It keeps to
// the 06 1x, 2x, 4x to 8x blocks: 06 39 (ARCEP's fictional range and
// Mayotte) and 06 9x (overseas departments) are not plain metropolitan
// mobiles.
func (g *gen) phoneFR() string {
	d := g.chars("1245678", 1) + g.digits(7)
	return fmt.Sprintf("+33 6 %s %s %s %s", d[0:2], d[2:4], d[4:6], d[6:8])
}

// card is a 16-digit Visa number with a valid Luhn digit, in groups of 4.
func (g *gen) card() string {
	body := "4" + g.digits(14)
	for d := byte('0'); d <= '9'; d++ {
		if s := body + string(d); luhn(s) {
			return s[0:4] + " " + s[4:8] + " " + s[8:12] + " " + s[12:16]
		}
	}
	panic("unreachable: one of ten check digits satisfies Luhn")
}

func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		d := int(s[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// ibanFR is a French IBAN (27 characters) with valid ISO 7064 check digits,
// printed in groups of four.
func (g *gen) ibanFR() string {
	bban := g.digits(23)
	// Check digits: 98 - (BBAN + "FR00" as digits) mod 97; F=15, R=27.
	n, _ := new(big.Int).SetString(bban+"152700", 10)
	cd := 98 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	s := fmt.Sprintf("FR%02d%s", cd, bban)
	var b strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[i:min(i+4, len(s))])
	}
	return b.String()
}

// nir is a French social security number with its 97-complement key, in
// the usual spaced form.
func (g *gen) nir() string {
	sex := 1 + g.r.IntN(2)
	body := fmt.Sprintf("%d%02d%02d%02d%03d%03d", sex, 40+g.r.IntN(60), 1+g.r.IntN(12), 1+g.r.IntN(19), 1+g.r.IntN(900), 1+g.r.IntN(999))
	n, _ := new(big.Int).SetString(body, 10)
	key := 97 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	return fmt.Sprintf("%s %s %s %s %s %s %02d", body[0:1], body[1:3], body[3:5], body[5:7], body[7:10], body[10:13], key)
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// githubToken is a classic personal access token with GitHub's CRC32
// checksum in its last six characters.
func (g *gen) githubToken() string {
	body := g.chars(base62, 30)
	n := crc32.ChecksumIEEE([]byte(body))
	var sum [6]byte
	for i := 5; i >= 0; i-- {
		sum[i] = base62[n%62]
		n /= 62
	}
	return "ghp_" + body + string(sum[:])
}

// awsKeyID is an AWS access key ID (AKIA + 16 base32 characters).
func (g *gen) awsKeyID() string { return "AKIA" + g.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16) }

// password is a random 18-character password.
func (g *gen) password() string {
	return g.chars("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", 14) + g.chars("-_", 1) + g.digits(3)
}
