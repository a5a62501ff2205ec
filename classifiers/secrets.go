package classifiers

import (
	"bytes"
	"encoding/base64"
	"math/bits"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// lazyRE returns a function that compiles pat on its first call and
// returns that *regexp.Regexp from then on; safe for concurrent use. A
// detector's expressions are compiled when it first reads a window, so New
// compiles none (TestLazyPatternsCompile compiles every one).
func lazyRE(pat string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}

// regexWindow returns a window function that runs re() over text[lo:hi] and
// calls fn for every match whose group g (0 = whole match) is not glued to
// token bytes on either side in the full text (see matchWindow).
//
// A pattern whose alternatives begin with a literal and single bytes
// around it, then a class run (see newPrefixRuns), is tried only where
// one of those shapes fits, and not at all where one of its required
// literals (requiredLiterals) is missing after that place. Where every
// alternative that fits has matches of at most n bytes, the expression is
// anchored there and reads n bytes; otherwise it searches from there to
// the window's end. A pattern without such shapes whose alternatives each
// begin with a literal (startLiterals) is searched from the first place
// one of those literals is, and not at all where none is.
func regexWindow(re func() *regexp.Regexp, g int, token func(byte) bool, fn func(st *scanState, d *detector, lo, hi int, m []int)) func(*scanState, *detector, int, int) {
	plan := sync.OnceValue(func() *regexPlan { return newRegexPlan(re()) })
	return func(st *scanState, d *detector, lo, hi int) {
		p := plan()
		if p.shapes == nil {
			var c startCursor
			c.reset(len(p.starts))
			matchLoop(st, d, lo, hi, g, token, fn, func(text []byte, pos, hi int, _ []int) []int {
				return p.findSlow(&c, text, pos, hi)
			}, nil)
			return
		}
		var c planCursor
		c.reset(len(p.shapes), len(p.lits))
		matchLoop(st, d, lo, hi, g, token, fn, func(text []byte, pos, hi int, _ []int) []int {
			return p.find(&c, text, pos, hi)
		}, nil)
	}
}

// regexPlan is how regexWindow searches for a pattern.
type regexPlan struct {
	re       *regexp.Regexp
	anchored *regexp.Regexp // ^(?:re)
	shapes   []*prefixRun   // nil: searched from pos with re
	lits     [][]byte       // required literals
	// starts are, when shapes is nil, the literals every match begins
	// with (one per alternative; nil when some alternative begins with
	// none): a match starts where one of them is.
	starts []startLit
}

func newRegexPlan(re *regexp.Regexp) *regexPlan {
	p := &regexPlan{re: re, lits: requiredLiterals(re.String())}
	if shapes := newPrefixRuns(re.String()); shapes != nil && len(shapes) <= maxShapes {
		p.shapes = shapes
		p.anchored = regexp.MustCompile(`^(?:` + re.String() + `)`)
	} else {
		p.starts = startLiterals(re.String())
	}
	return p
}

// startCursor is, per start literal of a plan, where it is next in the
// window (-2: not looked for; -1: nowhere before the window's end).
type startCursor struct {
	next [maxShapes]int
}

func (c *startCursor) reset(n int) {
	for i := range n {
		c.next[i] = -2
	}
}

// planCursor is the state of one window's search: per shape, the next
// place it fits (-2: not looked for; -1: none), and per required literal
// its next place.
type planCursor struct {
	next   [maxShapes]int
	runEnd [maxShapes]int // where the run of the shape at next ends
	resume [maxShapes]int // where the shape is looked for again
	lit    [4]int
}

func (c *planCursor) reset(shapes, lits int) {
	for i := range shapes {
		c.next[i], c.resume[i] = -2, 0
	}
	for i := range min(lits, len(c.lit)) {
		c.lit[i] = -2
	}
}

// findSlow is the leftmost match of re in text[pos:hi] (none where a
// required literal is missing), searched from the first place where a
// start literal is (none where there is none). c keeps those places
// across the calls of one window (same hi, pos not decreasing).
func (p *regexPlan) findSlow(c *startCursor, text []byte, pos, hi int) []int {
	for _, l := range p.lits {
		if !bytes.Contains(text[pos:hi], l) {
			return nil
		}
	}
	if p.starts != nil {
		s := -1
		for i, l := range p.starts {
			n := c.next[i]
			if n == -1 {
				continue
			}
			if n < pos {
				n = l.index(text[pos:hi])
				if n >= 0 {
					n += pos
				}
				c.next[i] = n
				if n < 0 {
					continue
				}
			}
			if s < 0 || n < s {
				s = n
			}
		}
		if s < 0 {
			return nil
		}
		pos = s
	}
	return submatchFrom(p.re, text, pos, hi)
}

// find is the leftmost match of re in text[pos:hi] as absolute submatch
// indices, or nil: found by trying the places where a shape fits, in
// order.
func (p *regexPlan) find(c *planCursor, text []byte, pos, hi int) []int {
	for {
		s := -1
		for i, sh := range p.shapes {
			n := c.next[i]
			if n == -1 {
				continue
			}
			if n < pos {
				n, c.runEnd[i] = sh.fromRun(text, max(pos, c.resume[i]), hi)
				c.next[i] = n
				if n < 0 {
					continue
				}
			}
			if s < 0 || n < s {
				s = n
			}
		}
		if s < 0 {
			return nil
		}
		for i, l := range p.lits {
			if i >= len(c.lit) {
				if !bytes.Contains(text[s:hi], l) {
					return nil
				}
				continue
			}
			if c.lit[i] < s {
				k := bytes.Index(text[s:hi], l)
				if k < 0 {
					return nil
				}
				c.lit[i] = s + k
			}
		}
		// The shapes that fit at s say how far a match from s can reach:
		// their longest match, or the run they read there and the
		// longest tail after it.
		n := 0
		for i, sh := range p.shapes {
			if c.next[i] != s {
				continue
			}
			switch {
			case sh.maxLen >= 0:
				n = max(n, sh.maxLen)
			case sh.tailMax >= 0:
				n = max(n, c.runEnd[i]-s+sh.tailMax)
			default:
				return submatchFrom(p.re, text, s, hi)
			}
		}
		if m := p.anchored.FindSubmatchIndex(text[s:min(hi, s+n)]); m != nil {
			for k := range m {
				if m[k] >= 0 {
					m[k] += s
				}
			}
			return m
		}
		// No match at s: a shape whose run ends at its ending byte fails
		// the same way from a start inside that run (what follows the
		// run is the same).
		for i, sh := range p.shapes {
			if c.next[i] == s && sh.next >= 0 {
				c.resume[i] = max(s+1, c.runEnd[i]-len(sh.lead)-len(sh.prefix)-len(sh.fixed)+1)
			}
		}
		pos = s + 1
	}
}

// matchWindow returns a window function that calls fn for every match of
// find in text[lo:hi] whose group g (0 = whole match) is not glued to token
// bytes on either side in the full text. find returns the leftmost match in
// text[pos:hi] as absolute submatch indices (it may append to m[:0]),
// exactly as FindSubmatchIndex would, or nil.
func matchWindow(find func(text []byte, pos, hi int, m []int) []int, g int, token func(byte) bool, fn func(st *scanState, d *detector, lo, hi int, m []int)) func(*scanState, *detector, int, int) {
	return func(st *scanState, d *detector, lo, hi int) {
		var mb [8]int
		matchLoop(st, d, lo, hi, g, token, fn, find, mb[:0])
	}
}

// matchLoop is matchWindow's loop over text[lo:hi], find given buf to
// append its match to (nil for finders that need none).
func matchLoop(st *scanState, d *detector, lo, hi, g int, token func(byte) bool, fn func(st *scanState, d *detector, lo, hi int, m []int), find func(text []byte, pos, hi int, m []int) []int, buf []int) {
	text := st.text
	pos := lo
	for pos < hi {
		m := find(text, pos, hi, buf)
		if m == nil {
			return
		}
		s, e := m[2*g], m[2*g+1]
		if s < 0 || (s > 0 && token(text[s-1])) || (e < len(text) && token(text[e])) {
			// Every match starting inside the token run that begins
			// here would fail the left boundary too: skip the run, so
			// a long run of candidates costs linear, not quadratic, time.
			pos = m[0] + 1
			if g == 0 {
				for pos < hi && token(text[pos]) {
					pos++
				}
			}
			continue
		}
		fn(st, d, s, e, m)
		pos = max(m[1], m[0]+1)
	}
}

// findGitHubToken matches gh[pousr]_[A-Za-z0-9]{36} or
// github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59} (the two cannot start at the
// same offset).
func findGitHubToken(text []byte, pos, hi int, m []int) []int {
	alnumRun := func(i, n int) bool {
		for k := i; k < i+n; k++ {
			if !isAlnum(text[k]) {
				return false
			}
		}
		return true
	}
	for s := pos; s+40 <= hi; s++ {
		if text[s] != 'g' {
			continue
		}
		if text[s+1] == 'h' && strings.IndexByte("pousr", text[s+2]) >= 0 && text[s+3] == '_' && alnumRun(s+4, 36) {
			return append(m, s, s+40)
		}
		if s+93 <= hi && string(text[s:s+11]) == "github_pat_" && alnumRun(s+11, 22) && text[s+33] == '_' && alnumRun(s+34, 59) {
			return append(m, s, s+93)
		}
	}
	return nil
}

// jwtPattern is what findJWT matches.
const jwtPattern = `eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`

// findJWT matches jwtPattern: eyJ, five or more base64url bytes, '.',
// eyJ, two or more, '.', any number. Each run is taken whole (the byte
// after it is not base64url), so a start inside the first run of a failed
// start fails the same way and the search resumes after that run: every
// byte is read at most twice.
func findJWT(text []byte, pos, hi int, m []int) []int {
	run := func(i int) int {
		for i < hi && isB64URLByte(text[i]) {
			i++
		}
		return i
	}
	eyJ := func(i int) bool { return i+3 <= hi && text[i] == 'e' && text[i+1] == 'y' && text[i+2] == 'J' }
	for pos+3 <= hi {
		k := bytes.Index(text[pos:hi], []byte("eyJ"))
		if k < 0 {
			return nil
		}
		s := pos + k
		e1 := run(s + 3)
		if e1-s-3 >= 5 && e1 < hi && text[e1] == '.' && eyJ(e1+1) {
			if e2 := run(e1 + 4); e2-e1-4 >= 2 && e2 < hi && text[e2] == '.' {
				return append(m, s, run(e2+1))
			}
		}
		pos = e1
	}
	return nil
}

func isTokenByte(b byte) bool  { return isWordByte(b) || b == '-' }
func isB64URLByte(b byte) bool { return isAlnum(b) || b == '_' || b == '-' }
func notToken(b byte) bool     { return false }

// simple emits the match with a fixed confidence.
func simple(conf float64, prefix int, norm func(string) string) func(*scanState, *detector, int, int, []int) {
	return func(st *scanState, d *detector, lo, hi int, _ []int) {
		v := string(st.text[lo:hi])
		n := v
		if norm != nil {
			n = norm(v)
		}
		st.emitString(d.idx, lo, hi, st.conf(d, conf, lo, hi), n, maskPrefix(prefix))
	}
}

// Values that appear in documentation and are not secrets.
var reservedSecrets = map[string]bool{
	"AKIAIOSFODNN7EXAMPLE":                     true,
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": true,
	"sk_test_4eC39HqLyjWDarjtT1zdp7dc":         true,
	"sk_test_BQokikJOvBiI2HlWgH4olfQ2":         true,
	// Google's example API key (cloud.google.com/docs/authentication/api-keys).
	"AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe": true,
	// Example keys in firebase/firebase-android-sdk's samples and tests
	// (gitleaks' gcp-api-key allowlist lists the same).
	"AIzaSyabcdefghijklmnopqrstuvwxyz1234567": true,
	"AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs": true,
	"AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM": true,
	"AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU": true,
	"AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0": true,
	"AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A": true,
	"AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c": true,
	"AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4": true,
	"AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY": true,
	"AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM": true,
	"AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ": true,
	"AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g": true,
	"AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU": true,
	"AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw": true,
	"AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE": true,
	"AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY": true,
	// RFC 7617's example Basic credentials (Aladdin, open sesame).
	"QWxhZGRpbjpvcGVuIHNlc2FtZQ==": true,
	// Azurite's well-known development storage key.
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==": true,
}

func (st *scanState) reservedSecret(v string) bool {
	return !st.s.includeReserved && (reservedSecrets[v] || strings.Contains(v, "EXAMPLE"))
}

func secretDetectors() []*detector {
	awsID := lazyRE(`(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}`)
	awsSecret := lazyRE(`(?i:secret_?access_?key|aws_?secret)["']?\s*(?:=|:|:=|=>)\s*["']?([A-Za-z0-9/+]{40})`)
	gl := lazyRE(`(?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt|glimt|glagent|gloas|glffct)-[A-Za-z0-9_.-]{20,90}`)
	slack := lazyRE(`xox[abposer]-[0-9]{6,15}-[0-9A-Za-z-]{8,200}|xapp-[0-9]-[A-Z0-9]{8,}-[0-9]{6,}-[a-f0-9]{32,}`)
	slackHook := lazyRE(`(?:https://)?hooks\.slack\.com/(?:services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}|workflows/[A-Za-z0-9/]{30,}|triggers/[A-Za-z0-9/]{30,})`)
	stripe := lazyRE(`(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,247}`)
	openai := lazyRE(`sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{16,200}T3BlbkFJ[A-Za-z0-9_-]{16,200}`)
	anthropic := lazyRE(`sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{80,110}AA`)
	google := lazyRE(`AIza[0-9A-Za-z_-]{35}`)
	azure := lazyRE(`AccountKey=([A-Za-z0-9+/]{86}==)`)
	npm := lazyRE(`npm_[A-Za-z0-9]{36}`)
	twilio := lazyRE(`SK[0-9a-fA-F]{32}|(?i:auth_?token)["']?\s*(?:=|:)\s*["']?([0-9a-f]{32})`)
	sendgrid := lazyRE(`SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`)
	gcp := lazyRE(`"private_key_id"\s*:\s*"([0-9a-f]{40})"`)

	return []*detector{
		{id: "secret.aws_access_key_id", cat: CategorySecret, desc: "AWS access key ID (AKIA/ASIA/… + 16 base32 characters)",
			keywords: []string{"akia", "asia", "abia", "acca", "a3t"}, after: 20, context: []string{"aws", "access_key", "amazon"},
			window: regexWindow(awsID, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				if st.reservedSecret(v) || maskRun(v[4:]) {
					return
				}
				st.emitString(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), v, maskPrefix(4))
			})},
		{id: "secret.aws_secret_access_key", cat: CategorySecret, desc: "AWS secret access key assigned to an aws_secret_access_key-like name (40 base64 characters, entropy floor)",
			keywords: []string{"secret_access_key", "secretaccesskey", "aws_secret", "awssecret"}, before: 8, after: 70,
			window: assignedWindow(awsSecret, 1, isRESpace, isB64BodyByte, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				if st.reservedSecret(v) || shannon(v) < 4.0 {
					return
				}
				st.emitString(d.idx, lo, hi, 0.9, v, maskFixed)
			})},
		{id: "secret.github_token", cat: CategorySecret, desc: "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_ with CRC32 checksum verified; github_pat_ fine-grained)",
			keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, after: 90,
			window: matchWindow(findGitHubToken, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := st.text[lo:hi]
				conf := 0.9
				if bytes.HasPrefix(v, []byte("github_pat_")) {
					if maskRun(v[11:]) {
						return
					}
				} else {
					if !validGitHubToken(v) {
						return
					}
					conf = 0.99
				}
				st.emit(d.idx, lo, hi, conf, v, maskPrefix(4))
			})},
		{id: "secret.gitlab_token", cat: CategorySecret, desc: "GitLab token (glpat-, gldt-, glrt-, glptt-, gloas-, glffct-, … with an entropy floor)",
			keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-", "glagent-", "gloas-", "glffct-"}, after: 100,
			window: regexWindow(gl, 0, isTokenByte, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				i := strings.IndexByte(v, '-')
				if shannon(v[i+1:]) < 3.5 {
					return
				}
				st.emitString(d.idx, lo, hi, 0.9, v, maskPrefix(i+1))
			})},
		{id: "secret.slack_token", cat: CategorySecret, desc: "Slack token (xoxb-, xoxp-, xoxa-, xoxe-, xapp-)",
			keywords: []string{"xox", "xapp-"}, after: 260, window: regexWindow(slack, 0, isTokenByte, simple(0.9, 5, nil))},
		{id: "secret.slack_webhook", cat: CategorySecret, desc: "Slack incoming webhook, workflow or trigger URL (with or without scheme)",
			keywords: []string{"hooks.slack.com"}, before: 8, after: 200, window: regexWindow(slackHook, 0, isAlnum, simple(0.95, 24, nil))},
		{id: "secret.stripe_key", cat: CategorySecret, desc: "Stripe secret or restricted key (live; test keys at lower confidence; documented keys reserved)",
			keywords: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, after: 260,
			window: regexWindow(stripe, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				if st.reservedSecret(v) {
					return
				}
				conf := 0.95
				if strings.Contains(v, "_test_") {
					conf = 0.6
				}
				st.emitString(d.idx, lo, hi, conf, v, maskPrefix(8))
			})},
		{id: "secret.openai_key", cat: CategorySecret, desc: "OpenAI API key (sk-…, sk-proj-…, with the T3BlbkFJ marker)",
			keywords: []string{"t3blbkfj"}, before: 220, after: 210, window: regexWindow(openai, 0, isTokenByte, simple(0.98, 3, nil))},
		{id: "secret.anthropic_key", cat: CategorySecret, desc: "Anthropic API key (sk-ant-api03-…AA, sk-ant-admin01-…)",
			keywords: []string{"sk-ant-"}, after: 130, window: regexWindow(anthropic, 0, isTokenByte, simple(0.98, 7, nil))},
		{id: "secret.google_api_key", cat: CategorySecret, desc: "Google API key (AIza + 35 characters)",
			keywords: []string{"aiza"}, after: 40,
			window: regexWindow(google, 0, isTokenByte, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				if st.reservedSecret(v) || maskRun(v[4:]) {
					return
				}
				st.emitString(d.idx, lo, hi, 0.9, v, maskPrefix(4))
			})},
		{id: "secret.azure_storage_key", cat: CategorySecret, desc: "Azure storage account key in a connection string (AccountKey=, 64 bytes base64)",
			keywords: []string{"accountkey="}, after: 100,
			window: regexWindow(azure, 1, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				raw, err := base64.StdEncoding.DecodeString(v)
				if err != nil || len(raw) != 64 || st.reservedSecret(v) {
					return
				}
				st.emitString(d.idx, lo, hi, 0.95, v, maskFixed)
			})},
		{id: "secret.npm_token", cat: CategorySecret, desc: "npm access token (npm_ + 36; the CRC32 checksum raises confidence)",
			keywords: []string{"npm_"}, after: 40,
			window: regexWindow(npm, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				v := string(st.text[lo:hi])
				conf := 0.99
				if !validGitHubToken(v) {
					if shannon(v[4:]) < 4.0 {
						return
					}
					conf = 0.75
				}
				st.emitString(d.idx, lo, hi, conf, v, maskPrefix(4))
			})},
		{id: "secret.twilio", cat: CategorySecret, desc: "Twilio API key SID (SK + 32 hex) or auth token near the word Twilio",
			keywords: []string{"twilio"}, before: 300, after: 300,
			window: regexWindow(twilio, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, m []int) {
				if m[2] >= 0 {
					lo, hi = m[2], m[3]
				}
				st.emitString(d.idx, lo, hi, 0.85, string(st.text[lo:hi]), maskFixed)
			})},
		{id: "secret.sendgrid", cat: CategorySecret, desc: "SendGrid API key (SG.<22>.<43>)",
			keywords: []string{"sg."}, after: 70, window: regexWindow(sendgrid, 0, isTokenByte, simple(0.95, 3, nil))},
		{id: "secret.private_key", cat: CategorySecret, desc: "Private key block (PEM, OpenSSH, PGP): matching BEGIN/END labels, base64 body that decodes (ASN.1 or openssh-key-v1)",
			keywords: []string{"-----begin "}, after: 16100, window: matchWindow(findPEM, 0, notToken, pemMatch)},
		{id: "secret.jwt", cat: CategorySecret, desc: "JSON Web Token (header decodes to JSON with \"alg\")",
			keywords: []string{"eyj"}, after: 14100,
			window: jwtWindow},
		{id: "secret.connection_string", cat: CategorySecret, desc: "Password in a connection URI (scheme://user:password@host); the password is the finding",
			keywords: []string{"://"}, hit: connStringHit},
		{id: "secret.gcp_service_account", cat: CategorySecret, desc: "Google Cloud service account key file (JSON with type service_account and a private_key_id)",
			keywords: []string{"\"service_account\""}, before: 3000, after: 3000,
			window: regexWindow(gcp, 1, isAlnum, func(st *scanState, d *detector, lo, hi int, _ []int) {
				st.emitString(d.idx, lo, hi, 0.95, string(st.text[lo:hi]), maskFixed)
			})},
		{id: "secret.generic", cat: CategorySecret, desc: "Secret assigned to a name such as password, secret, api_key, token, mot_de_passe (entropy floor, stop words)",
			keywords: genericKeys, hit: genericHit},
	}
}

// jwtWindow reports the tokens findJWT finds in text[lo:hi] whose header
// and payload validJWT accepts. The header and payload last decoded are
// remembered, so a window of one token's parts repeated decodes them once.
func jwtWindow(st *scanState, d *detector, lo, hi int) {
	var last []byte // the header and payload of the last token checked
	lastOK := false
	matchLoop(st, d, lo, hi, 0, isB64URLByte, func(st *scanState, d *detector, lo, hi int, _ []int) {
		t := st.text[lo:hi]
		hp := t[:bytes.LastIndexByte(t, '.')]
		ok := lastOK
		if last == nil || !bytes.Equal(hp, last) {
			ok = validJWT(string(t))
			last, lastOK = hp, ok
		}
		if !ok {
			return
		}
		conf := 0.9
		if t[len(t)-1] == '.' {
			conf = 0.7 // unsigned (alg none)
		}
		st.emit(d.idx, lo, hi, conf, t, maskPrefix(3))
	}, findJWT, nil)
}

// pemPattern is what findPEM matches.
const pemPattern = `-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----((?s:.){16}(?s:.)*?)-----END ([A-Z ]{3,40})-----`

// pemKinds are the words pemPattern allows before PRIVATE KEY.
var pemKinds = []string{"RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "PGP "}

// findPEM matches pemPattern (groups: the label, the body, the END label).
// The label admits one reading (no two of its words, nor a word and
// PRIVATE, start alike); the body is 16 characters, then up to the first
// -----END <3 to 40 capitals or spaces>----- (a '-' always starts a
// character). When a BEGIN's body has no END after it, no later BEGIN's
// has: each byte is read at most twice.
func findPEM(text []byte, pos, hi int, m []int) []int {
	has := func(i int, lit string) bool { return i+len(lit) <= hi && string(text[i:i+len(lit)]) == lit }
	for pos < hi {
		k := bytes.Index(text[pos:hi], []byte("-----BEGIN "))
		if k < 0 {
			return nil
		}
		s := pos + k
		pos = s + 1
		i := s + len("-----BEGIN ")
		for _, w := range pemKinds {
			if has(i, w) {
				i += len(w)
				break
			}
		}
		if !has(i, "PRIVATE KEY") {
			continue
		}
		i += len("PRIVATE KEY")
		if has(i, " BLOCK") {
			i += len(" BLOCK")
		}
		if !has(i, "-----") {
			continue
		}
		labelEnd, body := i, i+5
		q := body
		for n := 0; n < 16; n++ {
			if q >= hi {
				return nil
			}
			_, w := utf8.DecodeRune(text[q:hi])
			q += w
		}
		for {
			e := bytes.Index(text[q:hi], []byte("-----END "))
			if e < 0 {
				return nil
			}
			p := q + e
			r := p + len("-----END ")
			for r < hi && r-p-9 <= 40 && (text[r] >= 'A' && text[r] <= 'Z' || text[r] == ' ') {
				r++
			}
			if n := r - p - 9; n >= 3 && n <= 40 && has(r, "-----") {
				return append(m, s, r+5, s+len("-----BEGIN "), labelEnd, body, p, p+9, r)
			}
			q = p + 1
		}
	}
	return nil
}

// pemMatch validates a private key block: BEGIN and END labels agree and
// the body (after armour headers, with literal \n escapes from JSON or
// source code removed) is base64 that decodes to an ASN.1 sequence or an
// openssh-key-v1 blob; PGP armour only needs to decode.
func pemMatch(st *scanState, d *detector, lo, hi int, m []int) {
	text := st.text
	label := string(text[m[2]:m[3]])
	if string(text[m[6]:m[7]]) != label {
		return
	}
	body := text[m[4]:m[5]]
	var b64 []byte
	for _, line := range bytes.Split(bytes.ReplaceAll(body, []byte(`\n`), []byte("\n")), []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.Contains(line, []byte(":")) || (label == "PGP PRIVATE KEY BLOCK" && line[0] == '=') {
			continue
		}
		b64 = append(b64, line...)
	}
	raw, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(string(b64)); err != nil {
			return
		}
	}
	switch {
	case label == "OPENSSH PRIVATE KEY":
		if !bytes.HasPrefix(raw, []byte("openssh-key-v1\x00")) {
			return
		}
	case label == "PGP PRIVATE KEY BLOCK":
		if len(raw) < 16 {
			return
		}
	default:
		if len(raw) < 16 || raw[0] != 0x30 {
			return
		}
	}
	st.emit(d.idx, lo, hi, 0.99, b64, func(dst, _ []byte) []byte {
		return append(append(append(dst, "-----BEGIN "...), label...), "----- ****"...)
	})
}

var connSchemes = map[string]bool{
	"postgres": true, "postgresql": true, "mysql": true, "mariadb": true, "mongodb": true, "mongodb+srv": true,
	"redis": true, "rediss": true, "amqp": true, "amqps": true, "mssql": true, "sqlserver": true, "ftp": true,
	"ftps": true, "sftp": true, "smtp": true, "smtps": true, "ldap": true, "ldaps": true, "http": true, "https": true,
	"clickhouse": true, "cassandra": true, "couchdb": true, "neo4j": true, "nats": true, "oracle": true, "snowflake": true,
}

// connStringHit looks at scheme://user:password@host around a "://" hit.
func connStringHit(st *scanState, d *detector, start, end int) {
	text := st.text
	s := start
	for s > 0 && start-s < 24 && (isAlnum(text[s-1]) || text[s-1] == '+' || text[s-1] == '.' || text[s-1] == '-') {
		s--
	}
	scheme := strings.ToLower(string(text[s:start]))
	scheme = strings.TrimPrefix(scheme, "jdbc:")
	if !connSchemes[scheme] {
		return
	}
	// userinfo up to '@' (before any '/', whitespace or quote)
	i := end
	colon, at := -1, -1
	for ; i < len(text) && i-end < 400; i++ {
		b := text[i]
		if b == '@' {
			at = i
		}
		if b == '/' || b == '?' || b == '#' || b <= ' ' || b == '"' || b == '\'' || b == '`' || b == '>' {
			break
		}
		if b == ':' && colon < 0 && at < 0 {
			colon = i
		}
	}
	if colon < 0 || at < colon+1 {
		return
	}
	plo, phi := colon+1, at
	pw := string(text[plo:phi])
	if placeholderValue(pw) {
		return
	}
	host := string(text[at+1 : i])
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	if !st.s.includeReserved && reservedDomain(host) {
		return
	}
	conf := 0.8
	if len(pw) >= 8 && shannon(pw) >= 3 {
		conf = 0.9
	}
	st.emitString(d.idx, plo, phi, conf, pw, maskFixed)
}

// stopValues are values that sit in assignments without being secrets.
var stopValues = []string{"password", "changeme", "change_me", "example", "placeholder", "secret", "your_password",
	"yourpassword", "your-api-key", "your_api_key", "xxxxxxxx", "null", "none", "true", "false", "undefined",
	"redacted", "notasecret", "dummy", "sample", "test1234", "password123", "motdepasse", "required", "optional",
	"string", "token", "secret_key", "api_key", "process.env", "os.environ", "getenv"}

// stopIndex indexes stopValues for placeholderValue (read only): exact
// values, and the stop words by last byte (for "word." anywhere) and, when
// at least 7 long, by first byte (for the word anywhere). pair[c] is the
// set of second bytes of the byFirst[c] words, so most positions are ruled
// out with one bit test.
var stopIndex = func() (x struct {
	exact          map[string]bool
	minLen, maxLen int // of the exact values
	byLast         [256][]string
	byFirst        [256][]string
	pair           [256][4]uint64
}) {
	x.exact = map[string]bool{}
	x.minLen = len(stopValues[0])
	for _, s := range stopValues {
		x.exact[s] = true
		x.minLen, x.maxLen = min(x.minLen, len(s)), max(x.maxLen, len(s))
		x.byLast[s[len(s)-1]] = append(x.byLast[s[len(s)-1]], s)
		if len(s) >= 7 {
			x.byFirst[s[0]] = append(x.byFirst[s[0]], s)
			x.pair[s[0]][s[1]>>6] |= 1 << (s[1] & 63)
		}
	}
	return x
}()

// asciiFold maps each byte to its ASCII lower case (other bytes map to
// themselves), so a fold costs one load.
var asciiFold = func() (t [256]byte) {
	for c := range t {
		t[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()

// foldEqual reports whether v folded to ASCII lower case equals the lower-
// case s (len(v) == len(s)).
func foldEqual(v []byte, s string) bool {
	for j := 0; j < len(s); j++ {
		if asciiFold[v[j]] != s[j] {
			return false
		}
	}
	return true
}

// placeByte says which bytes placeholderBytes looks at: a byte that, lower-
// cased, starts a stop word of stopIndex.byFirst; '.', which may end a stop
// word; '(' and '{', which may open a template; a byte outside ASCII. Every
// other byte (0) is skipped with one load.
var placeByte = func() (t [256]uint8) {
	for c := range t {
		if len(stopIndex.byFirst[asciiFold[c]]) > 0 {
			t[c] |= placeFirst
		}
		if c >= 0x80 {
			t[c] |= placeHigh
		}
	}
	t['.'] |= placeDot
	t['('] |= placeOpen
	t['{'] |= placeOpen
	return t
}()

const (
	placeFirst = 1 << iota
	placeDot
	placeOpen
	placeHigh
)

// placeholderBytes is placeholderValue(string(v)) without allocating for
// values of up to 128 bytes. Its tests are disjunctions: each is checked
// on the bytes as they are, folding ASCII case byte by byte, and any that
// holds is the answer. A value with a byte outside ASCII that none holds
// for is left to placeholderValue, whose Unicode lower-casing may turn it
// into a stop word (the Kelvin sign is a 'k'); what holds on its ASCII
// bytes holds after that lower-casing too, as those bytes stay in place.
func placeholderBytes(v []byte) bool {
	if len(v) > 128 {
		return placeholderValue(string(v))
	}
	if len(v) < 4 {
		return true // too short, whatever its bytes
	}
	x := &stopIndex
	high := false
	for i := 0; i < len(v); i++ {
		f := placeByte[v[i]]
		if f == 0 {
			continue
		}
		if f&placeFirst != 0 && i+1 < len(v) {
			// Words of byFirst are at least 7 long: the pair test on the
			// next byte rules most positions out with one bit test.
			c, d := asciiFold[v[i]], asciiFold[v[i+1]]
			if x.pair[c][d>>6]&(1<<(d&63)) != 0 {
				for _, s := range x.byFirst[c] {
					if len(v)-i >= len(s) && foldEqual(v[i:i+len(s)], s) {
						return true
					}
				}
			}
		}
		switch {
		case f&placeDot != 0 && i > 0:
			for _, s := range x.byLast[asciiFold[v[i-1]]] {
				if i >= len(s) && foldEqual(v[i-len(s):i], s) {
					return true
				}
			}
		case f&placeOpen != 0:
			// a '(', "{{" or "${"
			if v[i] == '(' || i > 0 && (v[i-1] == '{' || v[i-1] == '$') {
				return true
			}
		case f&placeHigh != 0:
			high = true
		}
	}
	if high {
		return placeholderValue(string(v))
	}
	var lb [32]byte
	if len(v) >= x.minLen && len(v) <= x.maxLen && len(v) <= len(lb) {
		lv := lb[:len(v)]
		for i, c := range v {
			lv[i] = asciiFold[c]
		}
		if x.exact[string(lv)] {
			return true
		}
	}
	switch v[0] {
	case '$', '<', '{', '%', '[', '(':
		return true
	}
	return onlyMaskBytes(v)
}

// onlyMaskBytes is len(bytes.Trim(v, "*xX.-_#")) == 0 without building the
// cut set per call.
func onlyMaskBytes(v []byte) bool {
	for _, c := range v {
		switch c {
		case '*', 'x', 'X', '.', '-', '_', '#':
		default:
			return false
		}
	}
	return true
}

// placeholderValue reports values that are not secrets: too short, a
// stop word (equal to one, one followed by '.', or a long one anywhere, all
// case-insensitive), a template or variable reference, or only mask
// characters.
func placeholderValue(v string) bool {
	if len(v) < 4 {
		return true
	}
	lv := strings.ToLower(v)
	if stopIndex.exact[lv] {
		return true
	}
	for i := 0; i < len(lv); i++ {
		if lv[i] == '.' && i > 0 {
			for _, s := range stopIndex.byLast[lv[i-1]] {
				if strings.HasSuffix(lv[:i], s) {
					return true
				}
			}
		}
		for _, s := range stopIndex.byFirst[lv[i]] {
			if strings.HasPrefix(lv[i:], s) {
				return true
			}
		}
	}
	switch v[0] {
	case '$', '<', '{', '%', '[', '(':
		return true
	}
	if strings.Trim(v, "*xX.-_#") == "" || strings.Contains(v, "(") || strings.Contains(v, "{{") || strings.Contains(v, "${") {
		return true
	}
	return false
}

// notSecretKey reports whether the lower-cased key name k contains a word
// that makes its value something other than a secret (password_hash,
// token_type, secret_file, …). It is the disjunction of strings.Contains
// for each word, in one pass over k.
func notSecretKey(k []byte) bool {
	for i := range k {
		var words []string
		switch k[i] {
		case 'h':
			words = []string{"hash"}
		case '_':
			words = []string{"_len", "_id"}
		case 'l':
			words = []string{"length"}
		case 'p':
			words = []string{"policy", "path"}
		case 'r':
			words = []string{"reset"}
		case 'e':
			words = []string{"expir"}
		case 'f':
			words = []string{"file"}
		case 'u':
			words = []string{"url"}
		case 't':
			words = []string{"type"}
		case 'n':
			words = []string{"name"}
		default:
			continue
		}
		for _, w := range words {
			if len(k)-i >= len(w) && string(k[i:i+len(w)]) == w {
				return true
			}
		}
	}
	return false
}

// notSecretKeyWords are the words notSecretKey looks for (its tests check
// the two agree).
var notSecretKeyWords = []string{"hash", "_len", "length", "policy", "reset", "expir", "file", "path", "url", "type", "name", "_id"}

// charClasses counts lower, upper, digit and other characters present.
func charClasses[T ~string | ~[]byte](v T) int {
	var m uint8
	for i := 0; i < len(v); i++ {
		m |= charClass[v[i]]
	}
	return bits.OnesCount8(m)
}

// charClass is the bit of each byte's class for charClasses: lower, upper,
// digit or other.
var charClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = 1
		case c >= 'A' && c <= 'Z':
			t[c] = 2
		case c >= '0' && c <= '9':
			t[c] = 4
		default:
			t[c] = 8
		}
	}
	return t
}()

// submatchFrom is re's leftmost match in text[from:hi], its submatch
// offsets relative to text.
func submatchFrom(re *regexp.Regexp, text []byte, from, hi int) []int {
	m := re.FindSubmatchIndex(text[from:hi])
	for k := range m {
		if m[k] >= 0 {
			m[k] += from
		}
	}
	return m
}
