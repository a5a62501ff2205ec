package classifiers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Sample values: random-looking, mixed classes, not stop words.
const (
	gv1 = "Xk9mP2vLq7Rt4W"
	gv2 = "f3A9kL2mQ8xZ7vB1"
	gv3 = "q8Z2!mR5$wT9#kL3"
	gv4 = "7hG2kP9qR4tV6yB8nM3w"
)

// genericCases are the shapes of the generic-assignment grammar: want is
// the value the detector must report, "" for none.
var genericCases = []struct {
	name, text, want string
}{
	// config formats
	{"env", "DB_PASSWORD=" + gv1, gv1},
	{"env export", "export API_TOKEN=\"" + gv2 + "\"", gv2},
	{"yaml", "api_key: \"" + gv2 + "\"", gv2},
	{"yaml bare", "  client_secret: " + gv4, gv4},
	{"yaml list", "- token - '" + gv1 + "'", gv1},
	{"json", `{"apiKey": "` + gv2 + `"}`, gv2},
	{"toml", "secret_key = '" + gv3 + "'", gv3},
	{"ini", "[db]\npassword=" + gv3, gv3},
	{"properties", "spring.datasource.password=" + gv1, gv1},
	{"xml element", "<apiToken>" + gv2 + "</apiToken>", gv2},
	{"xml attribute", `<add key="x" password="` + gv3 + `"/>`, gv3},
	{"jenkins credentials.xml", "<secret>{AQAAABAAAAAQ" + gv4 + "Zk1Ym9vPQ==}</secret>", "{AQAAABAAAAAQ" + gv4 + "Zk1Ym9vPQ==}"},
	{"make ::=", "API_TOKEN ::= " + gv1, gv1},
	{"make ?=", "DEPLOY_PASSWORD ?= " + gv4, gv4},
	{"french", "mot_de_passe = 'Soleil!2024Ete'", "Soleil!2024Ete"},
	{"german", "passwort: " + gv3, gv3},
	{"url key", "GET https://maps.example.net/api?key=" + gv4 + "AbC1&q=paris", gv4 + "AbC1"},
	{"url sig", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=" + gv4 + "%2BaB3&se=1", gv4 + "%2BaB3"},
	{"log Key=", "INFO Using svc Key=" + gv4 + "Q1 for upload", gv4 + "Q1"},
	{"azure AccountKey", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + gv4 + "abcd+/==;EndpointSuffix=core", gv4 + "abcd+/=="},
	{"camel accessKey", "accessKey: \"" + gv4 + "\"", gv4},
	{"long value", "token = \"" + strings.Repeat(gv2, 12) + "\"", strings.Repeat(gv2, 12)},
	// languages
	{"python", "OPENAI_API_KEY = \"" + gv4 + "\"", gv4},
	{"python bytes", "secret = b'" + gv3 + "'", gv3},
	{"python dict", "creds = {'password': '" + gv3 + "'}", gv3},
	{"js", "const apiToken = '" + gv2 + "';", gv2},
	{"ts typed", "const apiToken: string = '" + gv2 + "';", gv2},
	{"js object", "headers: { authToken: `" + gv4 + "` }", gv4},
	{"java setProperty", `System.setProperty("X_TOKEN", "` + gv2 + `");`, gv2},
	{"java field", `private static final String DB_PASSWORD = "` + gv3 + `";`, gv3},
	{"csharp", `string clientSecret = @"` + gv3 + `";`, gv3},
	{"go :=", `token := "` + gv2 + `"`, gv2},
	{"go var typed", `var apiKey string = "` + gv2 + `"`, gv2},
	{"go header", `req.Header.Set("X-Api-Key", "` + gv4 + `")`, gv4},
	{"go setenv", `os.Setenv("GITHUB_TOKEN", "` + gv4 + `")`, gv4},
	{"php .=", `$password .= "` + gv3 + `";`, gv3},
	{"php array", `'api_key' => '` + gv2 + `',`, gv2},
	{"ruby", `ENV['SECRET_TOKEN'] = '` + gv1 + `'`, gv1},
	{"ruby symbol", `config.secret_key_base = "` + gv4 + `"`, gv4},
	{"c string", `static const char *api_key = "` + gv2 + `";`, gv2},
	{"cpp wide", `auto pwd = L"` + gv3 + `";`, gv3},
	{"shell env prefix", `X_API_KEY="` + gv4 + `" ./deploy.sh`, gv4},
	{"http header", "X-Api-Key: " + gv4 + "\r\nHost: api.example.net", gv4},
	{"shell export", "export AWS_ACCESS_KEY=" + gv4, gv4},
	{"kotlin", `val apiSecret: String = "` + gv2 + `"`, gv2},
	{"swift", `let authToken: String = "` + gv4 + `"`, gv4},
	{"java put", `props.put("db.password", "` + gv3 + `");`, gv3},
	{"scala arrow", `"token" -> "` + gv2 + `"`, gv2},
	{"credential", `credential = "` + gv4 + `"`, gv4},

	// false positives: identifiers and code expressions
	{"exports identifier", "exports.tokenProvider = tokenProvider;", ""},
	{"member access", "accessToken = response.data.access_token", ""},
	{"optional chaining", "const token = opts?.auth?.token;", ""},
	{"getenv", `token = os.Getenv("TOKEN")`, ""},
	{"python getenv", "token = os.getenv(\"TOKEN\")", ""},
	{"call", "password = hashPassword(input, saltRounds)", ""},
	{"index", "secret = secrets[idx]", ""},
	{"env ref", "password: ${DB_PASSWORD}", ""},
	{"shell var", "TOKEN=$GITHUB_TOKEN", ""},
	{"python format", "password = %(db_password)s", ""},
	{"go template", "token: {{ .Values.token }}", ""},
	{"angle placeholder", "api_key: <your-key>", ""},
	{"angle placeholder quoted", `api_key = "<YOUR_API_KEY_HERE>"`, ""},
	{"null", "password = null", ""},
	{"None", "secret = None", ""},
	{"nil", "token := nil", ""},
	{"true", "password: true", ""},
	{"number", "token_ttl: 3600", ""},
	{"number long", "password = 123456789012", ""},
	{"xxxx", `api_key = "sk-xxxxxxxxxxxxxxxxxxxx"`, ""},
	{"changeme", "password = changeme", ""},
	{"stars", "password: '************'", ""},
	{"redacted", "token=[REDACTED]", ""},
	{"redacted word", "token=REDACTED_abc123", ""},
	{"ellipsis", `api_key = "sk-proj-abc123..."`, ""},
	{"printf", `token = "Bearer%sAbc12"`, ""},
	{"comparison", "if password == other_password_value {", ""},
	{"low entropy", "secret = aaaaaaaaaaaa", ""},
	{"hash key", "password_hash = " + gv4, ""},
	{"sort key", `sortKey = "` + gv4 + `"`, ""},
	{"public key", `publicKey: "` + gv4 + `"`, ""},
	{"keyboard", "keyboard=" + gv4, ""},
	{"accessKeyId", "accessKeyId=" + gv4, ""},
	{"key word", `key = "` + gv4 + `"`, ""},
	{"sig not url", "sig=" + gv4, ""},
	{"setProperty var", `System.setProperty("X_TOKEN", token);`, ""},
	{"short weak key", "accessKey=Ab3dE5fG9h", ""},
	{"this member", "this.token = this.options.token;", ""},
	{"struct field", "\tPrivateKey:  testRSA2048PrivateKey,\n", ""},
	{"expression", "tokens = 2*maxCompilerConcurrency + minTokens*cfg.BuildP", ""},
	{"composite", "Credential: &syscall.Credential{Uid: 1}", ""},
	{"key in a string", `cmd.Env = append(cmd.Env, "PWD="+cmd.Dir)`, ""},
	{"prose value", `opt.Set("credentials", "same-origin")`, ""},
	{"label", `const fakeConnectionToken = "X-Fake-Connection-Token"`, ""},
	{"names itself", `"encryptionKey": "encryptionKey1024",`, ""},
	{"npmrc placeholder", "//host/:_authToken=MYTOKEN1", ""},
	{"path", "PWD: '/Users/maciej'", ""},
	{"constant", "SIOCGLIFTOKEN = -0x3f879678", ""},
	{"inside a word", `const simdPackage = "simd/archsimd"`, ""},
	{"member path digits", "GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ29.zrO8y", "ghp_aB3dE5fG7hJ9kL1mN3pQ29.zrO8y"},
	{"prose", "The password is stored in the vault.", ""},
}

func TestGenericGrammar(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("test")})
	if err != nil {
		t.Fatal(err)
	}
	var tp, tpHit, fp, fpHit int
	var misses []string
	for _, c := range genericCases {
		got := scanFor(t, s, "secret.generic", c.text)
		if c.want == "" {
			fp++
			if len(got) > 0 {
				fpHit++
				misses = append(misses, c.name+": false alarm "+strings.Join(got, "|"))
			}
			continue
		}
		tp++
		if len(got) == 1 && got[0] == c.want {
			tpHit++
		} else {
			misses = append(misses, c.name+": got "+strings.Join(got, "|"))
		}
	}
	recall := float64(tpHit) / float64(tp)
	t.Logf("recall %d/%d = %.3f, false alarms %d/%d", tpHit, tp, recall, fpHit, fp)
	if recall < 0.9 || fpHit > 0 {
		t.Errorf("recall %.3f (goal 0.90), %d false alarms; misses:\n%s", recall, fpHit, strings.Join(misses, "\n"))
	}
	for _, m := range misses {
		t.Log("miss:", m)
	}
}

// TestGenericOpen checks that an assignment cut at any byte is held from
// its value's start while the value is still being read.
func TestGenericOpen(t *testing.T) {
	t.Parallel()
	for _, c := range genericCases {
		if c.want == "" {
			continue
		}
		text := []byte(c.text)
		lo := bytes.Index(text, []byte(c.want))
		for cut := lo + 1; cut < lo+len(c.want); cut++ {
			part := text[:cut]
			held := false
			for _, k := range genericKeys {
				for i := 0; ; {
					j := bytes.Index(asciiLowerBytes(nil, part[i:]), []byte(k))
					if j < 0 {
						break
					}
					if at := genericOpen(part, i+j, i+j+len(k)); at <= lo {
						held = true
					}
					i += j + 1
				}
			}
			if !held {
				t.Errorf("%s cut at %d: value not held", c.name, cut)
				break
			}
		}
	}
}

// TestGenericOpenCode checks that a bare value whose next bytes may still
// show it is code is held: the text ends right after it and a blank or a
// bracket.
func TestGenericOpenCode(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"token = Xk9mP2vLq7Rt4W ", "token: Xk9mP2vLq7Rt4W,", "<token>Xk9mP2vLq7Rt4W<"} {
		b := []byte(text)
		start := bytes.Index(b, []byte("token"))
		lo := bytes.Index(b, []byte("Xk9"))
		if at := genericOpen(b, start, start+5); at != lo {
			t.Errorf("genericOpen(%q) = %d, want %d", text, at, lo)
		}
	}
}

// TestGenericLinear checks that keyword hits inside values already read
// cost no second reading: a megabyte of assignments whose values run into
// each other scans within a small multiple of a megabyte of prose (reading
// each value again would cost hundreds of times more).
func TestGenericLinear(t *testing.T) {
	s, err := New(Options{HashKey: []byte("test")})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	// CPU time (wall time where the system gives none): a machine busy
	// with other work makes a scan wait for a core, not cost more.
	timeOf := func(text string) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			t0, c0 := time.Now(), processCPU()
			if _, err := s.ScanString(context.Background(), text); err != nil {
				t.Fatal(err)
			}
			d := time.Since(t0)
			if c := processCPU(); c0 > 0 {
				d = time.Duration(c - c0)
			}
			best = min(best, d)
		}
		return best
	}
	prose := timeOf(strings.Repeat("The committee met on Monday and read the minutes. ", size/50))
	for _, text := range []string{
		"token=" + strings.Repeat("token:", size/6),
		"token=" + strings.Repeat("Xtoken=", size/7),
		"token='" + strings.Repeat(`token="a" `, size/10),
		"<token>" + strings.Repeat("token=", size/6),
	} {
		if d := timeOf(text); d > 40*prose+50*time.Millisecond {
			t.Errorf("%q…: %v, prose %v", text[:20], d, prose)
		}
	}
}

func FuzzReadGeneric(f *testing.F) {
	for _, c := range genericCases {
		f.Add(c.text)
	}
	f.Add("token=\x00\xff\xfe")
	f.Fuzz(func(t *testing.T, text string) {
		b := []byte(text)
		lb := asciiLowerBytes(nil, b) // as the prefilter folds: byte for byte
		for _, k := range genericKeys {
			for i := 0; ; {
				j := bytes.Index(lb[i:], []byte(k))
				if j < 0 {
					break
				}
				start, end := i+j, i+j+len(k)
				r := readGeneric(b, start, end)
				if r.ok && (r.lo < end || r.hi < r.lo || r.hi > len(b) || r.hi-r.lo > genericValueMax) {
					t.Fatalf("readGeneric(%q, %d, %d) = %+v", text, start, end, r)
				}
				if at := genericOpen(b, start, end); at > len(b) || at < 0 {
					t.Fatalf("genericOpen = %d", at)
				}
				i = j + i + 1
			}
		}
	})
}

// TestGenericSourceTrees counts secret.generic findings per 10,000 lines
// over the source trees named in AISHIELD_GENERIC_TREES (colon-separated)
// and lists them, so false alarms on ordinary code can be measured.
func TestGenericSourceTrees(t *testing.T) {
	trees := os.Getenv("AISHIELD_GENERIC_TREES")
	if trees == "" {
		t.Skip("AISHIELD_GENERIC_TREES not set")
	}
	s, err := New(Options{HashKey: []byte("test")})
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range filepath.SplitList(trees) {
		var lines, found, files int
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > 4<<20 {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil && strings.HasSuffix(p, ".gz") {
				b, err = gunzip(b)
			}
			if err != nil || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
				return nil // binaries and compressed files are not source
			}
			files++
			lines += bytes.Count(b, []byte("\n"))
			fs, err := s.Scan(context.Background(), b)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return nil
			}
			for _, f := range fs {
				if f.Detector != "secret.generic" {
					continue
				}
				found++
				ls := bytes.LastIndexByte(b[:f.Start], '\n') + 1
				sc := bufio.NewScanner(bytes.NewReader(b[ls:]))
				sc.Buffer(nil, 1<<20)
				sc.Scan()
				line := sc.Text()
				if c := f.Start - ls; c > 60 && c-60 < len(line) {
					line = line[c-60:]
				}
				if len(line) > 160 {
					line = line[:160]
				}
				t.Logf("%s:%d: %s", p, bytes.Count(b[:f.Start], []byte("\n"))+1, line)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("TREE %s: %d files, %d lines, %d findings, %.2f per 10,000 lines", root, files, lines, found, float64(found)*1e4/float64(max(lines, 1)))
	}
}

func TestIdentLike(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"testRSA2048PrivateKey", true},
		{"hs", true},
		{"line_js_1", true},
		{"$token", true},
		{"ghp_aB3dE5fG7hJ9kL1mN3pQ2956990537", false},
		{"JC4au9JCAKyUPf4RQh2l5bqm1m5ki9Q4WTCHrCQN", false},
		{"Xk9mP2vLq7Rt4W", false},
		{"9abc", false},
		{"a-b", false},
		{"", false},
	} {
		if got := identLike([]byte(c.v)); got != c.want {
			t.Errorf("identLike(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestWordyValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"tokenProvider", true},
		{"response.data.access_token", true},
		{"opts?.auth?.token", true},
		{"getXMLResponse", true},
		{"$token", true},
		{"this.options.token", true},
		{"XyJkNoAsoHlamq", false},
		{"SGOLpGLFiBWVwj", false},
		{"xnKChcrrJdZJgo", false},
		{"Xk9mP2vLq7", false},
		{"same-origin", true},
		{"extended master secret", true},
		{"Root%20CA%20Certificates", true},
		{"encryptionKey1024", false},
		{"", false},
	} {
		if got := wordyValue([]byte(c.v)); got != c.want {
			t.Errorf("wordyValue(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// gunzip returns the decompressed content of a .gz file, at most 16 MiB.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, 16<<20))
}

// maskedValueSpec is maskedValue's definition, one search per mask shape.
func maskedValueSpec(v []byte) bool {
	l := asciiLowerBytes(nil, v)
	return bytes.Contains(l, []byte("xxxx")) || bytes.Contains(v, []byte("***")) || bytes.Contains(v, []byte("...")) ||
		bytes.Contains(v, []byte("…")) || bytes.Contains(v, []byte("•••")) ||
		(bytes.IndexByte(v, '<') >= 0 && bytes.IndexByte(v, '>') > bytes.IndexByte(v, '<')) ||
		bytes.Contains(v, []byte("%s")) || bytes.Contains(v, []byte("%d")) || bytes.Contains(v, []byte("%v"))
}

func TestMaskedValue(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"sk-xxxxxxxx", true}, {"AKIAXXXX1234", true}, {"abXxXxcd", true}, {"Xk9mP2vLq7Rt4W", false},
		{"***", true}, {"ab**cd*ef", false}, {"abc...", true}, {"a..b..c", false},
		{"token…", true}, {"•••", true}, {"••x•", false}, {"<your-key>", true}, {"a>b<c", false},
		{"a>b<c>d", false}, {"<<>", true}, {"key-%s", true}, {"100%", false}, {"%x%d", true},
		{"%V", false}, {"\xe2\x80", false}, {"\xe2", false}, {"", false},
		{"..X.", false}, {".X..", false}, {"**x*", false}, {"..*.", false},
	} {
		if got := maskedValue([]byte(tc.v)); got != tc.want || got != maskedValueSpec([]byte(tc.v)) {
			t.Errorf("maskedValue(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func FuzzMaskedValue(f *testing.F) {
	for _, s := range []string{"sk-xXxX", "a>b<c>", "<k>", "•••", "…", "%v", "**.*", "a...", "..X.", "**x*"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if got, want := maskedValue(v), maskedValueSpec(v); got != want {
			t.Fatalf("maskedValue = %v, its definition says %v", got, want)
		}
	})
}

// namesItselfSpec is namesItself's definition: the value, lower-cased,
// holds the lower-cased key name (trimmed of leading "_-.$") or keyword,
// either counted only when at least 5 bytes long and no longer than the
// value; values over 256 bytes never do.
func namesItselfSpec(text []byte, r genericRead, val []byte) bool {
	if len(val) > 256 {
		return false
	}
	key := bytes.TrimLeft(text[r.ks:r.ke], "_-.$")
	kw := text[r.kwLo:r.kwHi]
	lv := asciiLowerBytes(nil, val)
	return len(key) >= 5 && len(key) <= len(val) && bytes.Contains(lv, asciiLowerBytes(nil, key)) ||
		len(kw) >= 5 && len(kw) <= len(val) && bytes.Contains(lv, asciiLowerBytes(nil, kw))
}

// TestNamesItself compares namesItself with its definition on the values
// readGeneric reads from assignments whose value repeats the key, the
// keyword or neither, in every case, and on key and keyword spans that do
// not nest.
func TestNamesItself(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`encryptionKey = "encryptionKey1024"`, true},
		{`_authToken=MYTOKEN1abc`, true},
		{`_authToken=xyAUTHTOKENz`, true},
		{`GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ0123456789`, false},
		{`password = "Xk9#mP2$v123456Lq7"`, false},
		{`password = "myPassWord99"`, true},
		{`db_pwd = "xDB_PWDx12"`, true},
		{`db_pwd = "xxpwd12345"`, false},
		{`$$.api-key: "ab.API-KEYcd"`, true},
		{`accessKey = "ACCESSKEY"`, true},
		{`accessKey = "accesskex1"`, false},
	} {
		b := []byte(tc.text)
		lb := asciiLowerBytes(nil, b)
		checked := false
		for _, k := range genericKeys {
			j := bytes.Index(lb, []byte(k))
			if j < 0 {
				continue
			}
			r := readGeneric(b, j, j+len(k))
			if !r.ok {
				continue
			}
			checked = true
			val := b[r.lo:r.hi]
			got, spec := namesItself(b, r, val), namesItselfSpec(b, r, val)
			if got != spec || got != tc.want {
				t.Errorf("namesItself(%q, kw %q) = %v, its definition says %v, want %v", tc.text, k, got, spec, tc.want)
			}
		}
		if !checked {
			t.Errorf("%q: no assignment read", tc.text)
		}
	}
	// spans as readGeneric never makes them: the keyword outside the name
	text := []byte("_tokenXYZ = aTOKENxyz99")
	for _, r := range []genericRead{
		{ks: 0, ke: 9, kwLo: 12, kwHi: 23}, {ks: 1, ke: 4, kwLo: 0, kwHi: 6}, {ks: 0, ke: 6, kwLo: 3, kwHi: 9},
		{ks: 0, ke: 0, kwLo: 0, kwHi: 0},
	} {
		for _, val := range []string{"aTOKENxyz99", "tokenxyz", "_tokenx", "XYZ = aTOKENxyz99", "abc"} {
			if got, spec := namesItself(text, r, []byte(val)), namesItselfSpec(text, r, []byte(val)); got != spec {
				t.Errorf("namesItself(%+v, %q) = %v, its definition says %v", r, val, got, spec)
			}
		}
	}
}

func FuzzNamesItself(f *testing.F) {
	f.Add([]byte("_authToken=MYTOKEN1"), 0, 10, 1, 10, []byte("myauthtoken"))
	f.Add([]byte("x.Pwd=x"), 0, 5, 2, 5, []byte("aaPWDbb"))
	f.Fuzz(func(t *testing.T, text []byte, ks, ke, kwLo, kwHi int, val []byte) {
		if ks < 0 || kwLo < 0 || ke < ks || kwHi < kwLo || ke > len(text) || kwHi > len(text) {
			return
		}
		r := genericRead{ok: true, ks: ks, ke: ke, kwLo: kwLo, kwHi: kwHi}
		if got, spec := namesItself(text, r, val), namesItselfSpec(text, r, val); got != spec {
			t.Fatalf("namesItself = %v, its definition says %v", got, spec)
		}
	})
}

func FuzzMaskedValueSkip(f *testing.F) {
	for _, s := range []string{"sk-xXxX", "a>b<c>", "ab..X.", "•••", "a…", "%v", "**.*", "aaaa***bbbb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got := maskedValue(v)
		if want := maskedValueSpec(v); got != want {
			t.Fatalf("maskedValue(%q) = %v, its definition %v", v, got, want)
		}
		// genericValueOK skips maskedValue when valueBits shows no mask byte
		var m uint8
		for _, c := range v {
			m |= valueBits[c]
		}
		if got && m&valueMask == 0 {
			t.Fatalf("maskedValue(%q) holds without a byte of maskByte", v)
		}
		if n := bits.OnesCount8(m & valueClasses); n != charClasses(v) {
			t.Fatalf("valueBits gives %d classes for %q, charClasses %d", n, v, charClasses(v))
		}
	})
}

// TestSkipType checks the type names skipType reads between a key and '='
// and the words it does not.
func TestSkipType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		i    int
		want int
	}{
		{"string = v", 0, 6},
		{"k String\t= v", 2, 8},
		{"str = v", 0, 3},
		{"&str = v", 0, 4},
		{"NSString = v", 0, 8},
		{"NSString* = v", 0, 9},
		{"*string = v", 0, 7},
		{"char* = v", 0, 5},
		{"[]byte = v", 0, 6},
		{"string", 0, 0},      // nothing after: no blank
		{"strings = v", 0, 0}, // a longer word
		{"stri = v", 0, 0},    // a shorter one
		{"NSString** = v", 0, 0},
		{"scheduler = v", 0, 0},
		{"char = v", 0, 0},
		{"the string = v", 0, 0}, // no type starts with 't'
		{"x", 5, 0},
	}
	for _, c := range cases {
		if got := skipType([]byte(c.text), c.i); got != c.want {
			t.Errorf("skipType(%q, %d) = %d, want %d", c.text, c.i, got, c.want)
		}
	}
}
