package classifiers

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/big"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Issue 18, case 5: values written so that no detector read them as
// written (after mailto: or smtp://, with invisible characters inside, in
// fullwidth forms, percent-, base64- or hex-encoded).

const addr05 = "jean.dupont@acme-corp.fr"

func scanner05(t *testing.T) *Scanner {
	t.Helper()
	s, err := New(Options{HashKey: []byte("hardening-05")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scan05(t *testing.T, s *Scanner, text string) []Finding {
	t.Helper()
	fs, err := s.ScanString(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	checkFindings(t, []byte(text), fs)
	return fs
}

// plainHash is the hash the scanner gives value written plainly.
func plainHash(t *testing.T, s *Scanner, det, value string) string {
	t.Helper()
	for _, f := range scan05(t, s, value) {
		if f.Detector == det {
			return f.Hash
		}
	}
	t.Fatalf("%s: not found written plainly", det)
	return ""
}

// redact05 replaces every finding's span by a marker, as the guard does.
func redact05(text string, fs []Finding) string {
	var b strings.Builder
	last := 0
	for _, f := range fs {
		if f.Start < last {
			continue
		}
		b.WriteString(text[last:f.Start])
		b.WriteString("[REDACTED]")
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// assertGone checks that no six bytes of value survive redaction, in
// whatever form they were written: the redacted text is read the way the
// normaliser reads it (NFKC, invisible characters removed, %XX decoded).
func assertGone(t *testing.T, redacted, value string) {
	t.Helper()
	r := string(dropIgnorable(norm.NFKC.Bytes([]byte(redacted))))
	if v := newView([]byte(r), nil, false, true); v != nil {
		r = string(v.text)
	}
	for i := 0; i+6 <= len(value); i++ {
		if strings.Contains(r, value[i:i+6]) {
			t.Fatalf("%q survives redaction: %q", value[i:i+6], redacted)
		}
	}
}

// want05 finds the finding of det in fs, checks its span and encoding and
// that its hash is that of plain, the value written plainly.
func want05(t *testing.T, s *Scanner, text string, fs []Finding, det, span, enc, plain string) {
	t.Helper()
	for _, f := range fs {
		if f.Detector != det {
			continue
		}
		if got := text[f.Start:f.End]; got != span {
			t.Fatalf("%q: %s spans %q, want %q", text, det, got, span)
		}
		if f.Encoding != enc {
			t.Fatalf("%q: %s encoding %q, want %q", text, det, f.Encoding, enc)
		}
		if h := plainHash(t, s, det, plain); f.Hash != h {
			t.Fatalf("%q: %s hash differs from the plain value's", text, det)
		}
		assertGone(t, redact05(text, fs), plain)
		return
	}
	t.Fatalf("%q: no %s finding in %+v", text, det, fs)
}

func TestHardening05MailPrefixes(t *testing.T) {
	s := scanner05(t)
	for _, prefix := range []string{"mailto:", "MAILTO:", "smtp://", "smtps://", "imap://", "user:", "login:", "sip:", `<a href="mailto:`} {
		text := "write to " + prefix + addr05 + " today"
		want05(t, s, text, scan05(t, s, text), "pii.email", addr05, "", addr05)
	}
	// The password of a URI's userinfo is not an address.
	for _, text := range []string{
		"https://user:pass@host.acme-corp.fr/x",
		"postgres://u:pw@db.acme-corp.fr",
		"ssh://git@github.com/org/repo",
		"ftp://anon@files.acme-corp.fr",
		"proxy user:pass@proxy.acme-corp.fr:8080",
		"redis://:s3cret@cache.acme-corp.fr",
	} {
		for _, f := range scan05(t, s, text) {
			if f.Detector == "pii.email" {
				t.Errorf("%q: pii.email at %q", text, text[f.Start:f.End])
			}
		}
	}
}

func TestHardening05ZeroWidth(t *testing.T) {
	s := scanner05(t)
	card := luhnComplete("497010123456789")
	for _, zw := range []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"} {
		for _, v := range []string{
			"jean.du" + zw + "pont@acme-corp.fr",
			"jean.dupont" + zw + "@" + zw + "acme-corp.fr",
			"j" + zw + "e" + zw + "a" + zw + "n.dupont@acme-corp.f" + zw + "r",
		} {
			text := "Contact: " + v + ", merci."
			want05(t, s, text, scan05(t, s, text), "pii.email", v, "", addr05)
		}
		v := card[:4] + zw + card[4:8] + zw + card[8:]
		text := "card " + v + " exp 12/27"
		want05(t, s, text, scan05(t, s, text), "pii.credit_card", v, "", card)
	}
}

// fullwidth writes the ASCII letters, digits and signs of s in their
// fullwidth forms (U+FF01..U+FF5E).
func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7F {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestHardening05Fullwidth(t *testing.T) {
	s := scanner05(t)
	for _, v := range []string{
		"jean.dupont＠acme-corp.fr",
		fullwidth(addr05),
		"jean.dupont@" + fullwidth("acme-corp") + ".fr",
	} {
		text := "Écrire à " + v + " avant lundi."
		want05(t, s, text, scan05(t, s, text), "pii.email", v, "", addr05)
	}
	phone := "+33 6 12 34 56 78"
	text := "Tél : " + fullwidth(phone) + " (portable)"
	want05(t, s, text, scan05(t, s, text), "pii.phone", fullwidth(phone), "", phone)
	card := groups4(luhnComplete("497010123456789"))
	text = "carte " + fullwidth(card) + " exp 12/27"
	want05(t, s, text, scan05(t, s, text), "pii.credit_card", fullwidth(card), "", card)
}

func TestHardening05PercentEncoded(t *testing.T) {
	s := scanner05(t)
	for _, tc := range []struct{ text, span, det, plain string }{
		{"to=jean.dupont%40acme-corp.fr&x=1", "jean.dupont%40acme-corp.fr", "pii.email", addr05},
		{"mailto:jean.dupont%40acme-corp.fr", "jean.dupont%40acme-corp.fr", "pii.email", addr05},
		{"q=jean%2Edupont%40acme%2Dcorp%2Efr", "jean%2Edupont%40acme%2Dcorp%2Efr", "pii.email", addr05},
		// Encoded twice: the second pass decodes what the first left.
		{"to=jean.dupont%2540acme-corp.fr", "jean.dupont%2540acme-corp.fr", "pii.email", addr05},
		{"tel=%2B33612345678&ok", "%2B33612345678", "pii.phone", "+33612345678"},
		{"tel=%2B33%206%2012%2034%2056%2078", "%2B33%206%2012%2034%2056%2078", "pii.phone", "+33 6 12 34 56 78"},
	} {
		want05(t, s, tc.text, scan05(t, s, tc.text), tc.det, tc.span, EncodingPercent, tc.plain)
	}
}

func TestHardening05Base64(t *testing.T) {
	s := scanner05(t)
	b64 := base64.StdEncoding.EncodeToString
	token := makeGitHub("ghp", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1")
	pw := "S3cr3t-Pa55w0rd!x9"
	ePw, eTok, eMail := b64([]byte(pw)), b64([]byte(token)), b64([]byte(addr05))
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n" +
		"  password: " + ePw + "\n  token: " + eTok + "\n  email: " + eMail + "\n"
	fs := scan05(t, s, secret)
	want05(t, s, secret, fs, "secret.github_token", eTok, EncodingBase64, token)
	want05(t, s, secret, fs, "pii.email", eMail, EncodingBase64, addr05)
	found := false
	for _, f := range fs {
		if f.Category == CategorySecret && secret[f.Start:f.End] == ePw {
			found = true
		}
	}
	if !found {
		t.Fatalf("the password's run is not a secret: %+v", fs)
	}
	assertGone(t, redact05(secret, fs), pw)

	// HTTP Basic credentials are a secret (secret.basic_auth) that wins
	// over the address decoded inside them; the same run elsewhere is the
	// address.
	basic := b64([]byte(addr05 + ":" + pw))
	text := "GET / HTTP/1.1\r\nAuthorization: Basic " + basic + "\r\n"
	fs = scan05(t, s, text)
	if len(fs) != 1 || fs[0].Detector != "secret.basic_auth" || text[fs[0].Start:fs[0].End] != basic {
		t.Fatalf("%q: want one secret.basic_auth over the credentials, got %+v", text, fs)
	}
	assertGone(t, redact05(text, fs), basic)
	text = "X-Forwarded-User: " + basic + "\r\n"
	want05(t, s, text, scan05(t, s, text), "pii.email", basic, EncodingBase64, addr05)

	// The URL alphabet, without padding.
	u := base64.RawURLEncoding.EncodeToString([]byte("<<" + addr05 + ">>?"))
	text = "state=" + u + "&next=/"
	want05(t, s, text, scan05(t, s, text), "pii.email", u, EncodingBase64, addr05)

	// Encoded twice over: base64 of a percent-encoded address, and base64
	// of base64 (the inner run ends where the decoded text does).
	nested := b64([]byte("contact=jean.dupont%40acme-corp.fr"))
	text = "payload: " + nested
	want05(t, s, text, scan05(t, s, text), "pii.email", nested, EncodingBase64, addr05)
	twice := b64([]byte(eMail))
	text = "payload: " + twice + "\n"
	want05(t, s, text, scan05(t, s, text), "pii.email", twice, EncodingBase64, addr05)
}

func TestHardening05Hex(t *testing.T) {
	s := scanner05(t)
	h := hex.EncodeToString([]byte(addr05))
	text := "blob " + h + " end"
	want05(t, s, text, scan05(t, s, text), "pii.email", h, EncodingHex, addr05)
	h = strings.ToUpper(hex.EncodeToString([]byte("tel +33 6 12 34 56 78")))
	text = "blob=" + h
	want05(t, s, text, scan05(t, s, text), "pii.phone", h, EncodingHex, "+33 6 12 34 56 78")
}

// TestHardening05NoFalseAlarms: encodings of what is not sensitive find
// nothing. The base64 and percent samples that decode to text are decoded
// (checked), and the text they hold has no value in it.
func TestHardening05NoFalseAlarms(t *testing.T) {
	s := scanner05(t)
	img := image.NewNRGBA(image.Rect(0, 0, 24, 24))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(3, 3, color.White)
	var pngBuf bytes.Buffer
	if err := png.Encode(&pngBuf, img); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "aishield test", Organization: []string{"Acme"}},
		NotBefore: time.Unix(1700000000, 0), NotAfter: time.Unix(1900000000, 0), DNSNames: []string{"api.acme-corp.fr"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	prose := "The quarterly figures were reviewed by the committee on Monday, and the cache pages are reused."
	for name, text := range map[string]string{
		"png data url": `<img src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(pngBuf.Bytes()) + `">`,
		"certificate":  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		"git shas":     "commit 62369ca5e0f1d4c3b2a1908f7e6d5c4b3a291807\nMerge: c56597c0a1b2 c0a527c4\nparent 6763c92d5b3f2e1a0c9d8e7f6a5b4c3d2e1f0a9b\n",
		"uuids":        "id 123e4567-e89b-12d3-a456-426614174000 and 9b2c1f3e-8d7a-4e6b-9c5d-0a1b2c3d4e5f, trace 0af7651916cd43dd8448eb211c80319c",
		"identifiers":  "func TestHardening05NoFalseAlarmsWithLongIdentifiers(t *testing.T) { x := newViewBuilderForNormalisedText(); getUserAccountByEmailAddressOrNil(ctx) }",
		"paths":        "see /usr/local/lib/python3.12/site-packages/aishield/normalisation/base64 and internal/wire/request.go",
		"sha256":       "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"b64 prose":    "note: " + base64.StdEncoding.EncodeToString([]byte(prose)),
		"pct prose":    "q=the%20quarterly%20figures%20were%20reviewed%2C%20100%25",
		"hex prose":    "msg " + hex.EncodeToString([]byte(prose)),
	} {
		if fs := scan05(t, s, text); len(fs) > 0 {
			t.Errorf("%s: %d findings, first %s at %q", name, len(fs), fs[0].Detector, text[fs[0].Start:fs[0].End])
		}
		if strings.Contains(name, "prose") {
			if v := newView([]byte(text), nil, false, true); v == nil || !v.decoded || !bytes.Contains(v.text, []byte("quarterly figures")) {
				t.Errorf("%s: not decoded", name)
			}
		}
	}
}

// TestHardening05Partial checks ScanPartial's promise (see
// TestScanPartialSettled) on every prefix of a text holding values in
// every form the normaliser reads: the findings of the whole text that
// start before settled are those of the prefix that start before it.
func TestHardening05Partial(t *testing.T) {
	s := scanner05(t)
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString
	text := "Bonjour, écrivez à jean.du\u200bpont@acme-corp.fr ou " + fullwidth("marie.curie@acme-corp.fr") +
		" (tél. " + fullwidth("+33 6 12 34 56 78") + "). mailto:paul.martin@acme-corp.fr et smtp://anne\u00ad.roy@acme-corp.fr; " +
		"lien ?to=luc.petit%40acme-corp.fr&x=1, data:\n  email: " + b64([]byte("eve.blanc@acme-corp.fr")) +
		"\n  basic: " + b64([]byte("zoe.noir@acme-corp.fr:Xk9#mP2$vLq7")) + "\nblob " + hex.EncodeToString([]byte(addr05)) +
		" carte " + fullwidth(groups4(luhnComplete("497010123456789"))) + " fin."
	whole, err := s.ScanString(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 9 {
		t.Fatalf("%d findings in the whole text: %+v", len(whole), whole)
	}
	fails := 0
	for k := 0; k <= len(text) && fails < 5; k++ {
		fs, settled, err := s.ScanPartial(ctx, []byte(text[:k]), PartialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if settled < 0 || settled > k || settled < k && k < len(text) && settled > 0 && !utf8.RuneStart(text[settled]) {
			t.Fatalf("prefix of %d bytes: settled %d", k, settled)
		}
		if want, got := before(whole, settled), before(fs, settled); fmt.Sprint(want) != fmt.Sprint(got) {
			fails++
			t.Errorf("prefix of %d bytes, settled %d (…%q|%q…):\n whole  %v\n prefix %v", k, settled, text[max(0, settled-40):settled], text[settled:k], want, got)
		}
	}
}

// FuzzNormalise checks the views' maps on arbitrary text: every view
// offset maps into the text, in order, values map to spans on rune
// boundaries that hold what was copied, and the findings of a scan (which
// reads the views) are on rune boundaries of the text.
func FuzzNormalise(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString
	for _, s := range []string{
		"jean.du\u200bpont@acme-corp.fr", fullwidth("jean.dupont@acme-corp.fr") + " \u00ad\ufeff",
		"to=jean.dupont%40acme-corp.fr %2B33%206 %C3%A9t%C3%A9 %E2%82", "data: " + b64([]byte("password: S3cr3t-Pa55w0rd!x9")),
		"e\u0301te\u0301 ﬁn ½ ① ㎏ ﷺ \xff\xfe ｱ ｶﾞ", "6a65616e2e6475706f6e744061636d652d636f72702e6672 " + b64([]byte("a%40b%2540c")),
	} {
		f.Add(s)
	}
	sc, err := New(Options{HashKey: []byte("fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		src := []byte(text)
		bounds := runeBoundaries(src)
		check := func(v *view, src []byte) {
			if v == nil {
				return
			}
			if v.srcLen != len(src) {
				t.Fatalf("srcLen %d of %d", v.srcLen, len(src))
			}
			prevS, prevE := 0, 0
			for p := 0; p < len(v.text); p++ {
				a, b := v.startUp(p), v.endUp(p+1)
				if a < 0 || b > len(src) || a >= b && !(a == b && b == len(src)) || a < prevS || b < prevE {
					t.Fatalf("byte %d of the view maps to %d-%d (after %d-%d) of %d", p, a, b, prevS, prevE, len(src))
				}
				prevS, prevE = a, b
				if k := v.segAt(p); k < 0 || p >= v.segs[k].vHi {
					if v.text[p] != src[a] {
						t.Fatalf("copied byte %d differs", p)
					}
				}
				if v.boundaryUp(p) != a {
					t.Fatalf("boundary %d", p)
				}
				if d := v.down(a); d > p {
					t.Fatalf("down(%d) = %d after %d", a, d, p)
				}
			}
			if v.boundaryUp(len(v.text)) != len(src) {
				t.Fatal("end boundary")
			}
			for _, g := range v.segs {
				if g.oLo > g.oHi || g.vLo > g.vHi || g.oHi > len(src) {
					t.Fatalf("seg %+v", g)
				}
			}
		}
		nv, cands := normaliseChunk(src, nil, nil, nil)
		check(nv, src)
		if full := newView(src, nil, true, false); (full == nil) != (nv == nil) || nv != nil && !bytes.Equal(full.text, nv.text) {
			t.Fatal("normaliseChunk and the full walk disagree")
		}
		vt := src
		if nv != nil {
			vt = nv.text
			for _, g := range nv.segs {
				if !bounds[g.oLo] || !bounds[g.oHi] {
					t.Fatalf("normalised seg %+v off rune boundaries", g)
				}
			}
		}
		parent := nv
		for pass := 1; pass <= maxDecodePasses; pass++ {
			var dv *view
			if pass == 1 {
				dv = decodeCands(vt, parent, cands, nil, nil)
				if full := newView(vt, parent, false, true); (full == nil) != (dv == nil) || dv != nil && !bytes.Equal(full.text, dv.text) {
					t.Fatal("the listed places and the full walk decode differently")
				}
			} else if parent != nil && parent.decoded {
				dv = redecode(parent, nil, nil)
			}
			check(dv, vt)
			if dv == nil {
				break
			}
			for p := 0; p < len(dv.text); p++ {
				a, b, _ := dv.toRoot(p, p+1)
				if a < 0 || b > len(src) || a > b {
					t.Fatalf("pass %d: byte %d maps to %d-%d of %d", pass, p, a, b, len(src))
				}
			}
			parent, vt = dv, dv.text
		}
		fs, err := sc.Scan(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		checkFindings(t, src, fs)
	})
}
