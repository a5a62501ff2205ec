package classifiers

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

type sample struct {
	name, text string
	want       string // the exact matched text; "" means no finding of the detector
}

func scanFor(t *testing.T, s *Scanner, id, text string) []string {
	t.Helper()
	fs, err := s.ScanString(context.Background(), text)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	var got []string
	for _, f := range fs {
		if f.Detector == id {
			got = append(got, text[f.Start:f.End])
			if strings.Contains(f.Preview, text[f.Start:f.End]) && f.Category != CategoryMarker && f.End-f.Start > 4 {
				t.Errorf("preview %q reveals the value", f.Preview)
			}
		}
	}
	return got
}

func TestDetectors(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("test")})
	if err != nil {
		t.Fatal(err)
	}
	visa := luhnComplete("497010123456789")
	amex := luhnComplete("37828224631001")
	maestro12 := luhnComplete("50201234567")
	maestro19 := luhnComplete("676112345678901234")
	jcb15 := luhnComplete("21319876543210")
	uatp := luhnComplete("11223344556677")
	visaBad := visa[:15] + string('0'+(visa[15]-'0'+1)%10)
	ibanFR := makeIBAN("FR", "3000400003"+"12345678901"+"85")
	ibanDE := makeIBAN("DE", "500105175407324931")
	ibanBad := ibanDE[:2] + "00" + ibanDE[4:]
	gh := makeGitHub("ghp", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1")
	ghBad := gh[:len(gh)-1] + "Z"
	nir := makeNIR("2690549588157")
	nirCorse := "269052A001012"
	nhs := makeNHS("943476591")
	bsn := makeBSN("11122233")
	cf := makeCF("RSSMRA85T10A562")
	btc := makeBase58Check(0, []byte("0123456789abcdefghij"))
	eth := makeEIP55("5aaeb6053f3e94c9b9a09f33669435e7ef1beaed")
	ethBad := strings.Replace(eth, "A", "a", 1)
	jwtHdr := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
	jwtTok := jwtHdr + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	sshBody := "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBnZW5lcmF0ZWQgZm9yIGFpc2hpZWxkIHRlc3RzIG9ubHk="
	rsaBody := "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm"

	cases := map[string][]sample{
		"pii.email": {
			{"plain", "write to jean.dupont@acme-corp.fr today", "jean.dupont@acme-corp.fr"},
			{"plus tag", "<marie+news@mail.co.uk>", "marie+news@mail.co.uk"},
			{"rfc2606", "user@example.com", ""},
			{"test tld", "a@b.test", ""},
			{"no tld", "root@localhost", ""},
			{"uri userinfo", "postgres://u:pw@db.internal.net", ""},
			{"at handle", "ping @someone", ""},
		},
		"pii.phone": {
			{"FR intl", "Tél : +33 6 12 34 56 78", "+33 6 12 34 56 78"},
			{"FR national", "appelez le 01 42 68 53 00", "01 42 68 53 00"},
			{"US national", "call (415) 555-2671 now", "(415) 555-2671"},
			{"GB intl", "+44 20 7123 4567", "+44 20 7123 4567"},
			{"GB drama", "+44 20 7946 0958", ""},
			{"FR fiction", "+33 6 39 98 12 34", ""},
			{"DE intl", "Telefon +49 30 901820", "+49 30 901820"},
			{"ES", "teléfono 612 345 678", "612 345 678"},
			{"IT", "telefono +39 06 6982 1234", "+39 06 6982 1234"},
			{"BE", "+32 2 555 12 12", "+32 2 555 12 12"},
			{"CH", "+41 44 668 18 00", "+41 44 668 18 00"},
			{"NANP fiction", "+1 613 555 0199", ""},
			{"CA valid", "tel +1 613 996 5555", "+1 613 996 5555"},
			{"date", "on 2024-01-15 we", ""},
			{"bare digits", "order 0142685300 shipped", ""},
			{"invalid intl", "+33 0 00 00 00 00", ""},
			{"extension x", "call 212-736-5000x309 today", "212-736-5000x309"},
			{"extension ext", "desk (415)736-0199 ext. 72, mornings", "(415)736-0199 ext. 72"},
			{"extension poste", "standard 01 42 68 53 00 poste 214", "01 42 68 53 00 poste 214"},
			{"fictional with extension", "call 212-555-0147x309", ""},
			{"trunk zero", "+44 (0)20 7123 4567", "+44 (0)20 7123 4567"},
			{"trunk zero drama", "+44 (0)20 7946 0958", ""},
			{"local after call me on", "call me on 736 5012 after six", "736 5012"},
			{"local after reach her at", "you can reach her at 4821-7730.", "4821-7730"},
			{"local after mobile", "Mobile: 9123 4567", "9123 4567"},
			{"local fictional", "call me on 555-0147", ""},
			{"local no cue", "version 736 5012 released", ""},
			{"local cue too far", "phone support is closed; ticket 736 5012", ""},
			{"local leading 1", "call me on 136 5012", ""},
			{"local number word", "order number 736 5012", ""},
			{"ssn shape", "id 666-74-2104", ""},
			{"order number", "order number ORD-8555513230 shipped", ""},
			{"ticket id", "see case_4157360199 for details", ""},
		},
		"pii.credit_card": {
			{"visa spaced", "card " + groups4(visa) + " exp", groups4(visa)},
			{"visa plain", "pan=" + visa + ";", visa},
			{"amex", "Amex " + amex, amex},
			{"maestro 12 digits", "Maestro card " + maestro12, maestro12},
			{"maestro 12 digits no context", "ref " + maestro12, ""},
			{"maestro 19 digits", "pay with " + maestro19, maestro19},
			{"jcb 15 digits", "JCB " + jcb15, jcb15},
			{"uatp", "UATP card " + uatp, uatp},
			{"uatp no context", "order " + uatp, ""},
			{"nir is not uatp", "card " + nir, ""},
			{"luhn fails", "card " + visaBad, ""},
			{"test card", "4111 1111 1111 1111", ""},
			{"stripe test card", "4242424242424242", ""},
			{"no issuer", luhnComplete("990000000000000"), ""},
			{"in identifier", "id_" + visa, ""},
		},
		"pii.iban": {
			{"FR spaced", "IBAN " + groups4(ibanFR), groups4(ibanFR)},
			{"DE compact", "IBAN: " + ibanDE + ".", ibanDE},
			{"bad check", "IBAN " + ibanBad, ""},
			{"wrong length", "IBAN " + ibanDE + "1", ""},
			{"example", "GB82 WEST 1234 5698 7654 32", ""},
			{"dashes", "IBAN " + strings.ReplaceAll(groups4(ibanFR), " ", "-"), strings.ReplaceAll(groups4(ibanFR), " ", "-")},
			{"mixed separators", "IBAN " + ibanFR[:4] + "-" + ibanFR[4:8] + " " + groups4(ibanFR[8:]), ""},
		},
		"pii.us_ssn": {
			{"dashed", "SSN 536-22-1234", "536-22-1234"},
			{"no context dashed", "id 536-22-1234", "536-22-1234"},
			{"bare with context", "social security number: 536221234", "536221234"},
			{"bare no context", "ref 536221234", ""},
			{"area 666", "SSN 666-22-1234", ""},
			{"area 9xx", "SSN 912-22-1234", ""},
			{"group 00", "SSN 536-00-1234", ""},
			{"woolworth", "SSN 078-05-1120", ""},
		},
		"pii.fr_nir": {
			{"spaced", "NIR " + nir[:1] + " " + nir[1:3] + " " + nir[3:5] + " " + nir[5:7] + " " + nir[7:10] + " " + nir[10:13] + " " + nir[13:], nir[:1] + " " + nir[1:3] + " " + nir[3:5] + " " + nir[5:7] + " " + nir[7:10] + " " + nir[10:13] + " " + nir[13:]},
			{"compact", "sécu " + nir, nir},
			{"bad key", "sécu " + nir[:13] + "00", ""},
			{"month 13", "sécu " + makeNIR("2691349588157"), ""},
			{"corsica", "NIR " + nirCorseFull(nirCorse), nirCorseFull(nirCorse)},
		},
		"pii.fr_siren": {
			{"context", "SIREN 732 829 320", "732 829 320"},
			{"rcs", "RCS Paris 732829320", "732829320"},
			{"no context", "ticket 732829320", ""},
			{"luhn fails", "SIREN 732829321", ""},
		},
		"pii.fr_siret": {
			{"context", "SIRET : 732 829 320 00074", "732 829 320 00074"},
			{"la poste", "SIRET 35600000000010", "35600000000010"},
			{"no context", "ref 73282932000074", ""},
			{"bad", "SIRET 73282932000075", ""},
		},
		"pii.uk_nino": {
			{"spaced", "NI number AB 12 34 56 C", "AB 12 34 56 C"},
			{"compact", "nino: JG123456A", "JG123456A"},
			{"bad prefix", "GB123456A", ""},
			{"bad suffix", "AB123456E", ""},
			{"Q first", "QQ123456C", ""},
		},
		"pii.uk_nhs": {
			{"spaced", "NHS number " + nhs[:3] + " " + nhs[3:6] + " " + nhs[6:], nhs[:3] + " " + nhs[3:6] + " " + nhs[6:]},
			{"no context", "ref " + nhs, ""},
			{"dashed", "NHS no: " + nhs[:3] + "-" + nhs[3:6] + "-" + nhs[6:], nhs[:3] + "-" + nhs[3:6] + "-" + nhs[6:]},
			{"patient", "patient " + nhs[:3] + " " + nhs[3:6] + " " + nhs[6:], nhs[:3] + " " + nhs[3:6] + " " + nhs[6:]},
			{"bad check", "NHS " + nhs[:9] + string('0'+(nhs[9]-'0'+1)%10), ""},
		},
		"pii.es_dni": {
			{"dni", "DNI 12345678Z", "12345678Z"},
			{"dni dash", "dni: " + makeDNI(48151623)[:8] + "-" + makeDNI(48151623)[8:], makeDNI(48151623)[:8] + "-" + makeDNI(48151623)[8:]},
			{"nie", "NIE X1234567L", "X1234567L"},
			{"wrong letter", "DNI 12345678A", ""},
			{"dni dotted", "DNI 12.345.678-Z", "12.345.678-Z"},
			{"dni dotted wrong letter", "DNI 12.345.678-A", ""},
			{"nie dashes", "NIE X-1234567-L", "X-1234567-L"},
			{"nie z", "NIE Z1234567R", "Z1234567R"},
			{"glued", "REF12345678Z", ""},
		},
		"pii.es_cif": {
			{"digit control", "CIF A58818501", "A58818501"},
			{"letter control", "NIF de la entidad: Q2826000H", "Q2826000H"},
			{"bad control", "CIF A58818502", ""},
			{"letter where a digit is due", "CIF A5881850A", ""},
			{"not an entity letter", "ref I58818501", ""},
			{"glued", "XA58818501", ""},
			{"no context", "code A58818501", ""},
		},
		"pii.it_fiscal_code": {
			{"valid", "codice fiscale " + cf, cf},
			{"bad check", "CF " + cf[:15] + string('A'+(cf[15]-'A'+1)%26), ""},
			{"glued", "X" + cf, ""},
		},
		"pii.nl_bsn": {
			{"context", "BSN " + bsn, bsn},
			{"no context", "order " + bsn, ""},
			{"bad", "BSN 111222334", ""},
		},
		"pii.ip_address": {
			{"v4 public", "from 81.2.69.160 at", "81.2.69.160"},
			{"v4 private", "host 192.168.1.20", ""},
			{"v4 loopback", "127.0.0.1", ""},
			{"v4 doc", "203.0.113.7", ""},
			{"version", "v1.2.3.4", ""},
			{"5 parts", "1.2.3.4.5", ""},
			{"v6 public", "client 2a00:1450:4007:80e::200e", "2a00:1450:4007:80e::200e"},
			{"v6 doc", "2001:db8::1", ""},
			{"v6 link local", "fe80::1ff:fe23:4567:890a", ""},
			{"cpp", "std::vector<int> a::b", ""},
			{"time", "at 12:30:45", ""},
		},
		"pii.private_ip": {
			{"rfc1918 10", "host 10.1.2.3 is down", "10.1.2.3"},
			{"rfc1918 172.16", "db at 172.16.5.4:5432", "172.16.5.4"},
			{"rfc1918 192.168", "gateway 192.168.1.254", "192.168.1.254"},
			{"link local", "got 169.254.10.20 from APIPA", "169.254.10.20"},
			{"v6 link local", "iface fe80::1ff:fe23:4567:890a", "fe80::1ff:fe23:4567:890a"},
			{"v6 ula", "node fd12:3456:789a:1::1 up", "fd12:3456:789a:1::1"},
			{"172.32 is public", "from 172.32.0.1", ""},
			{"public", "from 81.2.69.160 at", ""},
			{"loopback", "listen on 127.0.0.1:8080", ""},
			{"v6 loopback", "bind ::1", ""},
			{"documentation", "203.0.113.7", ""},
			{"cgnat", "100.64.1.2", ""},
			{"version", "v10.1.2.3", ""},
			{"five parts", "10.1.2.3.4", ""},
			{"standard block", "RFC 1918 reserves 10.0.0.0/8 for private use", ""},
			{"standard v6 block", "ULAs are in fc00::/7", ""},
			{"organisation subnet", "our VPN hands out 10.20.0.0/16", "10.20.0.0"},
		},
		"pii.crypto_wallet": {
			{"btc base58", "send to " + btc, btc},
			{"btc bad", "send to " + btc[:len(btc)-1] + "x", ""},
			{"bech32 v0", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
			{"bech32m v1", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0"},
			{"bech32 bad", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", ""},
			{"eth eip55", "wallet " + eth, eth},
			{"eth bad checksum", "wallet " + ethBad, ""},
			{"eth lower ctx", "ETH wallet " + strings.ToLower(eth), strings.ToLower(eth)},
			{"hex hash no ctx", "commit " + strings.ToLower(eth), ""},
		},
		"secret.aws_access_key_id": {
			{"key", "aws_access_key_id=AKIAZ7XQ4LMN2PQRST3U", "AKIAZ7XQ4LMN2PQRST3U"},
			{"example", "AKIAIOSFODNN7EXAMPLE", ""},
			{"too short", "AKIAZ7XQ4LMN2PQRST3", ""},
		},
		"secret.aws_secret_access_key": {
			{"assign", "aws_secret_access_key = Zx9k2Lm8Qp4Rt7Vw1Yb3Nc6Df0Gh5Jk8Ls2Po4Iu", "Zx9k2Lm8Qp4Rt7Vw1Yb3Nc6Df0Gh5Jk8Ls2Po4Iu"},
			{"example", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""},
			{"low entropy", "aws_secret_access_key = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""},
		},
		"secret.github_token": {
			{"classic", "token: " + gh, gh},
			{"bad crc", "token: " + ghBad, ""},
			{"fine grained", "github_pat_11ABCDEFG0abcdefghijkl_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456", "github_pat_11ABCDEFG0abcdefghijkl_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"},
		},
		"secret.gitlab_token": {
			{"pat", "GITLAB=glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1", "glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1"},
			{"low entropy", "glpat-aaaaaaaaaaaaaaaaaaaa", ""},
		},
		"secret.slack_token": {
			{"bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
			{"prose", "the xox- prefix", ""},
		},
		"secret.slack_webhook": {
			{"hook", "url: https://hooks.slack.com/services/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", "https://hooks.slack.com/services/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"},
			{"docs root", "https://hooks.slack.com/", ""},
		},
		"secret.stripe_key": {
			{"live", "sk_live_51Hx9Kd7Lm2Qw8Rt4Vb6Yn1Za3", "sk_live_51Hx9Kd7Lm2Qw8Rt4Vb6Yn1Za3"},
			{"documented test", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", ""},
			{"publishable", "pk_live_51Hx9Kd7Lm2Qw8Rt4Vb6Yn1Za3", ""},
		},
		"secret.openai_key": {
			{"proj", "OPENAI_API_KEY=sk-proj-Ab3De5Gh7Jk9Lm1Np3Qr5St7Vw9Yz1T3BlbkFJAb3De5Gh7Jk9Lm1Np3Qr5St7", "sk-proj-Ab3De5Gh7Jk9Lm1Np3Qr5St7Vw9Yz1T3BlbkFJAb3De5Gh7Jk9Lm1Np3Qr5St7"},
			{"no marker", "sk-proj-Ab3De5Gh7Jk9Lm1Np3Qr5St7Vw9Yz1Ab3De5Gh7Jk9Lm1Np3Qr5St7", ""},
		},
		"secret.anthropic_key": {
			{"api03", "sk-ant-api03-" + strings.Repeat("Ab3De5Gh7J", 9) + "k9LAA", "sk-ant-api03-" + strings.Repeat("Ab3De5Gh7J", 9) + "k9LAA"},
			{"truncated", "sk-ant-api03-Ab3De5", ""},
		},
		"secret.google_api_key": {
			{"key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"},
			{"short", "AIzaSyA1b2C3", ""},
		},
		"secret.azure_storage_key": {
			{"conn", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + b64of(64) + ";", b64of(64)},
			{"azurite", "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;", ""},
		},
		"secret.npm_token": {
			{"checksum", "//registry.npmjs.org/:_authToken=" + "npm_" + gh[4:], "npm_" + gh[4:]},
			{"low entropy", "npm_" + strings.Repeat("a", 36), ""},
		},
		"secret.twilio": {
			{"api key", "TWILIO_API_KEY=SK" + strings.Repeat("0a1b2c3d", 4), "SK" + strings.Repeat("0a1b2c3d", 4)},
			{"no twilio", "SK" + strings.Repeat("0a1b2c3d", 4), ""},
		},
		"secret.sendgrid": {
			{"key", "SG.Ab3De5Gh7Jk9Lm1Np3Qr5S.Ab3De5Gh7Jk9Lm1Np3Qr5St7Vw9Yz1Ab3De5Gh7Jk9L", "SG.Ab3De5Gh7Jk9Lm1Np3Qr5S.Ab3De5Gh7Jk9Lm1Np3Qr5St7Vw9Yz1Ab3De5Gh7Jk9L"},
			{"msg", "msg.send(x)", ""},
		},
		"secret.private_key": {
			{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + sshBody + "\n-----END OPENSSH PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + sshBody + "\n-----END OPENSSH PRIVATE KEY-----"},
			{"rsa", "-----BEGIN RSA PRIVATE KEY-----\n" + rsaBody + "\n-----END RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----\n" + rsaBody + "\n-----END RSA PRIVATE KEY-----"},
			{"json escaped", `"-----BEGIN RSA PRIVATE KEY-----\n` + strings.ReplaceAll(rsaBody, "\n", `\n`) + `\n-----END RSA PRIVATE KEY-----"`, `-----BEGIN RSA PRIVATE KEY-----\n` + strings.ReplaceAll(rsaBody, "\n", `\n`) + `\n-----END RSA PRIVATE KEY-----`},
			{"mismatched", "-----BEGIN RSA PRIVATE KEY-----\n" + rsaBody + "\n-----END EC PRIVATE KEY-----", ""},
			{"placeholder", "-----BEGIN RSA PRIVATE KEY-----\n...your key here...\n-----END RSA PRIVATE KEY-----", ""},
			{"public", "-----BEGIN PUBLIC KEY-----\n" + rsaBody + "\n-----END PUBLIC KEY-----", ""},
		},
		"secret.jwt": {
			{"token", "Authorization: Bearer " + jwtTok, jwtTok},
			{"no alg", "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiIxIn0.abc", ""},
		},
		"secret.connection_string": {
			{"postgres", "DATABASE_URL=postgres://app:Pq8vL2xZ9k@db.prod.acme.io:5432/app", "Pq8vL2xZ9k"},
			{"placeholder", "postgres://app:${DB_PASSWORD}@db.prod.acme.io/app", ""},
			{"reserved host", "mysql://root:Pq8vL2xZ9k@db.example.com/x", ""},
			{"no password", "https://user@github.com/x", ""},
		},
		"secret.gcp_service_account": {
			{"json", `{"type": "service_account", "project_id": "p", "private_key_id": "` + strings.Repeat("a1b2c3d4e5", 4) + `"}`, strings.Repeat("a1b2c3d4e5", 4)},
			{"not sa", `{"type": "authorized_user", "private_key_id": "` + strings.Repeat("a1b2c3d4e5", 4) + `"}`, ""},
		},
		"secret.generic": {
			{"env", "DB_PASSWORD=Xk9#mP2$vLq7", "Xk9#mP2$vLq7"},
			{"yaml", "api_key: \"f3A9kL2mQ8xZ7vB1\"", "f3A9kL2mQ8xZ7vB1"},
			{"french", "mot_de_passe = 'Soleil!2024Ete'", "Soleil!2024Ete"},
			{"stop word", "password = changeme", ""},
			{"env ref", "password: ${DB_PASSWORD}", ""},
			{"call", "token = os.getenv(\"TOKEN\")", ""},
			{"comparison", "if password == other_password_value {", ""},
			{"low entropy", "secret = aaaaaaaaaaaa", ""},
		},
		"marker.classification": {
			{"banner", "CONFIDENTIAL\nQ3 plan", "CONFIDENTIAL"},
			{"strictly", "STRICTLY CONFIDENTIAL - do not forward", "STRICTLY CONFIDENTIAL"},
			{"noforn", "SECRET//NOFORN\n", "SECRET//NOFORN"},
			{"label fr", "Classification : Diffusion restreinte", "Diffusion restreinte"},
			{"alone fr", "Confidentiel\n\nBonjour", "Confidentiel"},
			{"german", "STRENG VERTRAULICH", "STRENG VERTRAULICH"},
			{"spanish", "CONFIDENCIAL", "CONFIDENCIAL"},
			{"italian", "== Riservato ==", "Riservato"},
			{"prose", "please keep this confidential between us", ""},
			{"identifier", "CONFIDENTIAL_FLAG = 1", ""},
			{"label level", "Sensitivity level: Confidential", "Confidential"},
			{"label inside a word", "He relabelled the crates. You wrote: \"The confidential audit was late\"", ""},
			{"label far from colon", "The status of the report, as the team wrote: the confidential memo", ""},
		},
		"pii.person_name": {
			{"title", "Referred by Dr Oliver Renaud, pulmonologist.", "Oliver Renaud"},
			{"title with period", "Prof. J. van Dijk will chair.", "J. van Dijk"},
			{"french title", "Réunion avec Mme Delacroix demain", "Delacroix"},
			{"monsieur abbreviated", "M. RENAUD a signé", "RENAUD"},
			{"given and surname", "Contact Amélie Fontaine today.", "Amélie Fontaine"},
			{"middle initial", "John F. Kennedy spoke", "John F. Kennedy"},
			{"particle", "a painting by Vincent van Gogh", "Vincent van Gogh"},
			{"d apostrophe", "Valérie Giscard d'Estaing", "Valérie Giscard d'Estaing"},
			{"hyphen and apostrophe", "Signed: Marie-Claire O'Neil", "Marie-Claire O'Neil"},
			{"typographic apostrophe", "Ms O’Brien’s report", "O’Brien"},
			{"possessive", "Jean-Pierre Martin's car", "Jean-Pierre Martin"},
			{"capitals after a title", "PATIENT: Mr THOMAS SMITH", "THOMAS SMITH"},
			{"capitals alone", "PATIENT: THOMAS SMITH", ""},
			{"quoted", "“Sarah Connor”", "Sarah Connor"},
			{"no-break space", "Chère Inès Benali,", "Inès Benali"},
			{"arabic given name in french", "Patient: Karima Benali, NIR", "Karima Benali"},
			{"french given name", "Case handled by Ulysse Carpentier, disputes team", "Ulysse Carpentier"},
			{"lone given name after thanks", "Thanks, Hugo.", "Hugo"},
			{"lone given name", "Hugo left early.", ""},
			{"greeting", "Dear Tomasz,\nthe report is late.", "Tomasz"},
			{"greeting, name not listed", "Hi Oluwadamilare, can you check?", "Oluwadamilare"},
			{"request", "Could you ask Maria about it?", "Maria"},
			{"request, word not listed", "call Close on the file", ""},
			{"signature", "Kind regards,\nAnneliese", "Anneliese"},
			{"dash signature", "See you.\n— Ottoline", "Ottoline"},
			{"greeting, team", "Hi Team, the build is green.", ""},
			{"given name then surname listed", "Seoyeon Choi joined.", "Seoyeon Choi"},
			{"surname listed after any word", "Ottoline Okonkwo joined.", "Ottoline Okonkwo"},
			{"two words after a cue", "I spoke to Ottoline Vasquez-Brandt today.", "Ottoline Vasquez-Brandt"},
			{"two words before a verb", "Ottoline Vasquez said no.", "Ottoline Vasquez"},
			{"two words, no context", "Ottoline Vasquez arrived.", ""},
			{"sentence start before a given name", "Yesterday Emily Carter called.", "Emily Carter"},
			{"surname first", "Zhang Wei wrote back.", "Zhang Wei"},
			{"place with a surname", "We flew to Costa Rica in May.", ""},
			{"product after a cue", "Ask Google Cloud support.", ""},
			{"weekday and morning", "Monday Morning Meeting moved.", ""},
			{"role and comma", "The tenant, Ottoline Vasquez, called.", "Ottoline Vasquez"},
			{"greeting, plural", "Hello Gophers!", ""},
			{"greeting, one letter", "Hi R, see below", ""},
			{"greeting in code", "add $hi, Rtmp", ""},
			{"txtar file marker", "-- Limiter.Play --\npackage main", ""},
			{"dash signature, two words", "Thanks.\n-- Ottoline Vasquez\n", "Ottoline Vasquez"},
			{"placeholder name", "Name: John Doe, born 1 January 1970", ""},
			{"form field", "Employee: Jordan Lee, jordan.lee@acme-corp.us", "Jordan Lee"},
			{"surname first", "Présents : DUPONT Jean, 3 rue Lafayette", "DUPONT Jean"},
			{"doctorate field", "Befund von Dr. med. Weber, Klinik Nord", "Weber"},
			{"two doctorate fields", "Gutachten: Dr. rer. nat. Ottilie Brandstetter", "Ottilie Brandstetter"},
			{"surname first accented", "Nom : LEFÈVRE Hélène\n", "LEFÈVRE Hélène"},
			{"surname first hyphenated", "BENALI-MARTIN Inès.", "BENALI-MARTIN Inès"},
			{"acronym before a given name", "IBAN Jean-Pierre", ""},
			{"street named after a person", "12 rue Jean-Baptiste Clément, Paris", ""},
			{"school named after a person", "au Lycée Marie Curie depuis 2019", ""},
			{"saint", "La gare Saint Lazare", ""},
			{"the person, not the street", "Dr Jean Moulin habite avenue Foch", "Jean Moulin"},
			{"common noun after a given name", "the Ruby Gems registry and the Elizabeth Line", ""},
			{"two-letter code before a given name", "FR Jean", ""},
			{"capitals given name before a given name", "JEAN Paul", ""},
			{"form field french", "Nom complet : Ombeline Vasseur\n", "Ombeline Vasseur"},
			{"form field two words", "Signed by: Tiago Ferreira", "Tiago Ferreira"},
			{"form field company", "Customer: Globex Bank", ""},
			{"form field one word", "Patient: Jordan", ""},
			{"not a name field", "Subject: Quarterly Figures", ""},
			{"placeholder after a title", "Herr Max Mustermann, Musterstraße 1", ""},
			{"office after a title", "Monsieur le Directeur, veuillez agréer", ""},
			{"office after a title, english", "Dear Mr President, members of the board", ""},
			{"senior, not señor", "Sr. Manager, Payments", ""},
			{"degree", "M. Sc. thesis defended", ""},
			{"party after a given name", "the Christian Democratic Party won", ""},
			{"title after a title", "Herr Doktor Müller kommt", "Müller"},
			{"academic title", "Dr. med. Hans Weber", "Hans Weber"},
			{"professor", "Ask Professor Higgins", "Higgins"},
			{"institution word ends a name", "Thomas Edison State University", "Thomas Edison"},
			{"street", "12 Hugo Street", ""},
			{"company", "Victor Inc announced", ""},
			{"months", "Jan Feb Mar", ""},
			{"single capital", "Gen Z and Plan B", ""},
			{"word names left out", "The Will of May", ""},
			{"title alone", "Dr. J. was late", ""},
			{"m without period", "Model M Keyboard", ""},
			{"glued to a word", "xJohn Smith", ""},
			{"glued to digits", "John Smith2", ""},
			{"lower case", "john smith", ""},
		},
		"marker.tlp": {
			{"red", "TLP:RED", "TLP:RED"},
			{"amber strict", "Marking: TLP:AMBER+STRICT.", "TLP:AMBER+STRICT"},
			{"clear", "tlp: clear", "tlp: clear"},
			{"green space", "TLP: GREEN", "TLP: GREEN"},
			{"not a color", "TLP:BLUE", ""},
			{"prose", "the TLP standard", ""},
		},
	}
	fams := familySamples() // the secret families' samples (TestFamilySamples)
	for _, info := range Builtins() {
		if info.ID == sensitivityLabelID {
			continue
		}
		if _, ok := fams[info.ID]; len(cases[info.ID]) == 0 && !ok {
			t.Errorf("no samples for %s", info.ID)
		}
	}
	for id, samples := range cases {
		for _, c := range samples {
			t.Run(id+"/"+c.name, func(t *testing.T) {
				got := scanFor(t, s, id, c.text)
				if c.want == "" {
					if len(got) != 0 {
						t.Errorf("false positive %q in %q", got, c.text)
					}
					return
				}
				if len(got) != 1 || got[0] != c.want {
					t.Errorf("got %q, want [%q] in %q", got, c.want, c.text)
				}
			})
		}
	}
}

func nirCorseFull(body string) string {
	// 2 69 05 2A 001 01 with key over 19 substitution minus 1000000
	v := body
	for k := 0; k < 100; k++ {
		s := v + twoDigits(k)
		if validNIR(s) {
			return s
		}
	}
	return v + "00"
}

func twoDigits(k int) string { return string([]byte{byte('0' + k/10), byte('0' + k%10)}) }

func b64of(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	return encodeStd(b)
}

func TestIncludeReserved(t *testing.T) {
	t.Parallel()
	s, _ := New(Options{IncludeReserved: true})
	for id, text := range map[string]string{
		"pii.email":                "user@example.com",
		"pii.credit_card":          "4111 1111 1111 1111",
		"secret.aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
		"pii.ip_address":           "203.0.113.7",
		"pii.person_name":          "Signed: John Q. Public",
	} {
		if got := scanFor(t, s, id, text); len(got) != 1 {
			t.Errorf("%s: IncludeReserved: got %q in %q", id, got, text)
		}
	}
}

func TestKeccak(t *testing.T) {
	t.Parallel()
	h := keccak256(nil)
	if got := hex.EncodeToString(h[:]); got != "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470" {
		t.Fatalf("keccak256(\"\") = %s", got)
	}
	// EIP-55 test vector from the EIP.
	if ok, checked := validEthAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"); !ok || !checked {
		t.Fatal("EIP-55 vector rejected")
	}
}

// TestNameConfidence checks the name detector's confidence: 0.85 after a
// title, 0.7 from a given name, 0.15 more with a label word whole within
// 24 bytes before the name.
func TestNameConfidence(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k"), Detectors: []string{"pii.person_name"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want float64
	}{
		{"We saw Amélie Fontaine on Monday.", 0.7},
		{"Report by Dr Oliver Renaud.", 0.85},
		{"Dear Dr Oliver Renaud,", 1},
		{"Chère Amélie Fontaine,", 0.85},
		{"Patient: Oliver Renaud", 0.85},
		{"Employee: Jordan Lee", 0.85},
		{"please rename Amelie Fontaine", 0.7},
		{"the names list and then, far later, Amelie Fontaine", 0.7},
	} {
		fs, err := s.ScanString(context.Background(), c.text)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Confidence != c.want {
			t.Errorf("%q: %+v, want one name at confidence %.2f", c.text, fs, c.want)
		}
	}
}

// TestAllow checks Options.Allow: an allowed value is not reported, in any
// case or spacing its detector normalises, while other values are; an
// entry with no value is an error that does not echo it.
func TestAllow(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k"), Allow: []string{"support@acme-corp.com", "John Deere Tractors"}})
	if err != nil {
		t.Fatal(err)
	}
	text := "Write to SUPPORT@Acme-Corp.com or bob.martin@acme-corp.com about the John  Deere Tractors of Hugo Benali."
	fs, err := s.ScanString(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, text[f.Start:f.End])
	}
	if want := []string{"bob.martin@acme-corp.com", "Hugo Benali"}; !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
	// Positions after a dropped value stay exact.
	if len(fs) == 2 && (fs[1].Line != 1 || fs[1].Column != strings.Index(text, "Hugo")+1) {
		t.Errorf("Hugo Benali at %d:%d", fs[1].Line, fs[1].Column)
	}
	_, err = New(Options{Allow: []string{"nothing sensitive in this secret-free line"}})
	var re *RuleError
	if !errors.As(err, &re) || re.Rule != "allow[0]" || strings.Contains(err.Error(), "secret-free") {
		t.Errorf("empty allow entry: %v", err)
	}
}
