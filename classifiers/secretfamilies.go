package classifiers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// secretFamily is one provider's token format as a row of a table: the
// engine registers every row as a keyword-triggered detector, so adding a
// format is adding a row.
//
// Each pattern runs only in the windows around its family's keywords (the
// Aho-Corasick prefilter finds them). A pattern with a capture group
// reports group 1 (a value assigned to a provider-named key, found by the
// provider's name); one without reports the whole match, whose first
// prefix bytes are the format's public prefix.
type secretFamily struct {
	id, desc string
	// provider and format are for the detector reference
	// (docs/detectors.md); check says what is validated beyond the pattern.
	provider, check string
	keywords        []string
	before, after   int
	patterns        []string
	// token reports the bytes that may not touch the value on either
	// side; nil means isTokenByte (letters, digits, '_' and '-').
	token func(byte) bool
	// prefix is the length of the public prefix a whole-match value
	// starts with: the mask shows it, and the entropy floor and the mask
	// run test read the rest.
	prefix int
	// entropy is the Shannon floor (bits per byte) of the value after
	// its prefix.
	entropy float64
	// valid, when set, checks structure or a checksum.
	valid func(v string) bool
	// conf is the confidence of a finding (0 means 0.9).
	conf float64
}

// familyDetectors returns a detector for every row of secretFamilies.
func familyDetectors() []*detector {
	fams := secretFamilies()
	out := make([]*detector, 0, len(fams)+1)
	for i := range fams {
		out = append(out, fams[i].detector())
	}
	out = append(out, &detector{id: "secret.curl_auth", cat: CategorySecret,
		desc:     "Credentials on a curl command line: the password of -u/--user user:password, or the token of an -H Authorization (or *-Token, *-Key) header",
		keywords: []string{"curl"}, after: curlReach, window: curlWindow(
			lazyRE(`(?:^|[ \t])(?:-u|--user)(?:[ \t]+|=)(?:"([^"\n]{1,})"|'([^'\n]{1,})'|([^\s"']{1,}))`),
			lazyRE(`(?:^|[ \t])(?:-H|--header)(?:[ \t]+|=)(?:"([^"\n]{1,})"|'([^'\n]{1,})')`))})
	return out
}

func (f *secretFamily) detector() *detector {
	d := &detector{id: f.id, cat: CategorySecret, desc: f.desc, keywords: f.keywords, before: f.before, after: f.after}
	tok := f.token
	if tok == nil {
		tok = isTokenByte
	}
	// Each pattern is compiled on the detector's first window (New
	// compiles none); the group a match reports is known only then.
	var runs []func(*scanState, *detector, int, int)
	for _, p := range f.patterns {
		run := sync.OnceValue(func() func(*scanState, *detector, int, int) {
			re := regexp.MustCompile(p)
			g := min(re.NumSubexp(), 1)
			if !strings.Contains(p, assignOp) {
				return regexWindow(func() *regexp.Regexp { return re }, g, tok, f.emit(g))
			}
			return assignedWindow(func() *regexp.Regexp { return re }, g, isBlank, tok, f.emit(g))
		})
		runs = append(runs, func(st *scanState, d *detector, lo, hi int) { run()(st, d, lo, hi) })
	}
	if len(runs) == 1 {
		d.window = runs[0]
		return d
	}
	d.window = func(st *scanState, d *detector, lo, hi int) {
		for _, run := range runs {
			run(st, d, lo, hi)
		}
	}
	return d
}

// emit validates a match of a pattern that reports group g and records it.
func (f *secretFamily) emit(g int) func(st *scanState, d *detector, lo, hi int, m []int) {
	mask := maskFixed
	prefix := 0
	if g == 0 && f.prefix > 0 {
		mask, prefix = maskPrefix(f.prefix), f.prefix
	}
	conf := f.conf
	if conf == 0 {
		conf = 0.9
	}
	return func(st *scanState, d *detector, lo, hi int, _ []int) {
		v := string(st.text[lo:hi])
		body := v[min(prefix, len(v)):]
		if st.reservedSecret(v) || maskRun(body) || shannon(body) < f.entropy || (f.valid != nil && !f.valid(v)) {
			return
		}
		st.emitString(d.idx, lo, hi, conf, v, mask)
	}
}

// maskRun reports a value that holds a run of six or more of one
// character (letters case-folded): AKIAXXXXXXXXXXXXXXXX, ghp_xxxx…, a
// 0000… filler. Random tokens of these lengths practically never do.
func maskRun[T ~string | ~[]byte](v T) bool {
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i]|0x20 == v[i-1]|0x20 && (isAlpha(v[i]) || v[i] == v[i-1]) {
			run++
			if run >= 6 {
				return true
			}
			continue
		}
		run = 1
	}
	return false
}

func isB64TokenByte(b byte) bool { return isTokenByte(b) || b == '+' || b == '/' }

// isB64BodyByte is a byte of a standard base64 body without padding: an
// '=' next to a value is an assignment, not part of it.
func isB64BodyByte(b byte) bool { return isAlnum(b) || b == '+' || b == '/' }

// isAzureSecretByte is a byte of an Azure AD client secret's alphabet.
func isAzureSecretByte(b byte) bool { return isTokenByte(b) || b == '~' || b == '.' }

// assigned returns a pattern for a value assigned to a key that names a
// provider (`DATADOG_API_KEY=…`, `"okta_token": "…"`, `datadog.key: …`,
// `DD-API-KEY: …`): the name, up to 30 more key bytes, an optional closing
// quote, an assignment operator, an optional opening quote, then the value
// as group 1.
func assigned(name, value string) string {
	return `(?i:` + name + `)[\w.-]{0,30}` + assignOp + `[ \t]*["'` + "`" + `]?(` + value + `)`
}

// assignedWindow is regexWindow for a pattern of a key, an optional
// quote, spaces (space) and an operator ('=' or ':') before its value: the
// search starts where assignedFrom says.
func assignedWindow(re func() *regexp.Regexp, g int, space, token func(byte) bool, fn func(st *scanState, d *detector, lo, hi int, m []int)) func(*scanState, *detector, int, int) {
	return matchWindow(func(text []byte, pos, hi int, _ []int) []int {
		from := assignedFrom(text, pos, hi, space)
		if from < 0 {
			return nil
		}
		return submatchFrom(re(), text, from, hi)
	}, g, token, fn)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// isRESpace is regexp's \s.
func isRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// assignOp is the quote, spaces and operator between an assigned pattern's
// key and its value.
const assignOp = `["']?[ \t]*(?:=|:=|=>|:)`

// assignedFrom returns where in text[pos:hi] a match of an assigned pattern
// can start first, or -1 when none can: every match holds an operator
// ('=' or ':'), and only key bytes ([\w.-], or bytes of 0x80 or more, which
// (?i) letters such as U+017F may be), a quote and spaces come before it,
// so a match starts at or after the run of those ending at the first
// operator (space says which bytes the pattern allows before the
// operator). On a window of a repeated provider name without an operator
// the expression is never run (its NFA would follow thirty threads per
// byte).
func assignedFrom(text []byte, pos, hi int, space func(byte) bool) int {
	o := bytes.IndexAny(text[pos:hi], "=:")
	if o < 0 {
		return -1
	}
	k := pos + o
	for k > pos && space(text[k-1]) {
		k--
	}
	if k > pos && (text[k-1] == '"' || text[k-1] == '\'') {
		k--
	}
	for k > pos && (isWordByte(text[k-1]) || text[k-1] == '.' || text[k-1] == '-' || text[k-1] >= utf8.RuneSelf) {
		k--
	}
	return k
}

const uuidPattern = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

// nameReach is how far around a provider's name a value assigned to it is
// looked for (the name and the value sit on one line).
const nameReach = 160

func secretFamilies() []secretFamily {
	return []secretFamily{
		// ---- cloud platforms ----
		{id: "secret.aws_bedrock_key", provider: "AWS Bedrock", desc: "Amazon Bedrock API key (long-term ABSK…, short-term bedrock-api-key-…)",
			check:    "base64 body decodes to BedrockAPIKey-… (long-term) or a presigned bedrock.amazonaws.com URL (short-term)",
			keywords: []string{"absk", "bedrock-api-key-"}, after: 2100, token: isB64TokenByte, prefix: 4, entropy: 3.5, valid: validBedrockKey,
			patterns: []string{`ABSK[A-Za-z0-9+/]{109,}={0,2}`, `bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/]{40,}={0,2}`}},
		{id: "secret.alibaba_access_key_id", provider: "Alibaba Cloud", desc: "Alibaba Cloud AccessKey ID (LTAI + 12-20 alphanumerics)",
			keywords: []string{"ltai"}, after: 24, prefix: 4, entropy: 3.0, patterns: []string{`LTAI[A-Za-z0-9]{12,20}`}},
		{id: "secret.azure_ad_client_secret", provider: "Microsoft Entra ID", desc: "Azure AD / Entra ID application client secret (3 characters, a digit, Q~, 31-34 characters)",
			keywords: []string{"0q~", "1q~", "2q~", "3q~", "4q~", "5q~", "6q~", "7q~", "8q~", "9q~"}, before: 4, after: 36, token: isAzureSecretByte, entropy: 3.5,
			patterns: []string{`[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}`}},
		{id: "secret.cloudflare_origin_ca_key", provider: "Cloudflare", desc: "Cloudflare Origin CA key (v1.0-<24 hex>-<146 hex>)",
			keywords: []string{"v1.0-"}, after: 175, prefix: 5, entropy: 3.0, patterns: []string{`v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`}},
		{id: "secret.cloudflare_api_token", provider: "Cloudflare", desc: "Cloudflare API token (40 characters) or global API key (37 hex) assigned to a Cloudflare-named key",
			keywords: []string{"cloudflare", "cf_api_", "cf-api-"}, after: nameReach, entropy: 3.5,
			patterns: []string{assigned(`cloudflare|cf[_-]api`, `[A-Za-z0-9_-]{40}|[a-f0-9]{37}`)}},
		{id: "secret.digitalocean_token", provider: "DigitalOcean", desc: "DigitalOcean personal, OAuth or refresh token (dop_v1_/doo_v1_/dor_v1_ + 64 hex)",
			keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"}, after: 64, prefix: 7, entropy: 3.0, patterns: []string{`do[por]_v1_[a-f0-9]{64}`}},
		{id: "secret.firebase_cloud_messaging_key", provider: "Firebase", desc: "Firebase Cloud Messaging legacy server key (AAAA…:APA91b…)",
			keywords: []string{":apa91b"}, before: 12, after: 150, entropy: 3.5, patterns: []string{`AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{134}`}},
		{id: "secret.flyio_token", provider: "Fly.io", desc: "Fly.io access token (fo1_ + 43, fm1a_/fm1r_/fm2_ macaroons)",
			keywords: []string{"fo1_", "fm1a_", "fm1r_", "fm2_"}, after: 2000, token: isB64TokenByte, prefix: 4, entropy: 4.0,
			patterns: []string{`fo1_[A-Za-z0-9_-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3}`}},
		{id: "secret.google_oauth_client_secret", provider: "Google Cloud", desc: "Google OAuth client secret (GOCSPX- + 28)",
			keywords: []string{"gocspx-"}, after: 28, prefix: 7, entropy: 3.5, patterns: []string{`GOCSPX-[A-Za-z0-9_-]{28}`}},
		{id: "secret.google_oauth_token", provider: "Google Cloud", desc: "Google OAuth access token (ya29.…) or refresh token (1//0…)",
			keywords: []string{"ya29.", "1//0"}, after: 2048, prefix: 4, entropy: 4.0,
			patterns: []string{`ya29\.[A-Za-z0-9_-]{30,}|1//0[A-Za-z0-9_-]{40,}`}},
		{id: "secret.heroku_key", provider: "Heroku", desc: "Heroku API key (HRKU-AA + 58) or a UUID assigned to a Heroku-named key",
			keywords: []string{"hrku-", "heroku"}, after: nameReach, prefix: 5, entropy: 3.0,
			patterns: []string{`HRKU-AA[A-Za-z0-9_-]{58}`, assigned(`heroku`, uuidPattern)}},
		{id: "secret.openshift_token", provider: "OpenShift / Kubernetes", desc: "OpenShift user token (sha256~ + 43)",
			keywords: []string{"sha256~"}, after: 43, prefix: 7, entropy: 4.0, patterns: []string{`sha256~[A-Za-z0-9_-]{43}`}},
		{id: "secret.tailscale_key", provider: "Tailscale", desc: "Tailscale auth, API, OAuth client or webhook key (tskey-…)",
			keywords: []string{"tskey-"}, after: 110, prefix: 6, entropy: 3.5,
			patterns: []string{`tskey-(?:[a-z]+-)?[A-Za-z0-9]{6,24}-[A-Za-z0-9]{20,64}`}},
		{id: "secret.terraform_cloud_token", provider: "HashiCorp Terraform Cloud", desc: "Terraform Cloud / Enterprise API token (<14>.atlasv1.<60-70>)",
			keywords: []string{".atlasv1."}, before: 15, after: 70, entropy: 4.0, patterns: []string{`[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}`}},
		{id: "secret.vault_token", provider: "HashiCorp Vault", desc: "Vault service, batch or recovery token (hvs./hvb./hvr.)",
			keywords: []string{"hvs.", "hvb.", "hvr."}, after: 300, prefix: 4, entropy: 3.5, patterns: []string{`hv[sbr]\.[A-Za-z0-9_-]{24,}`}},
		{id: "secret.yandex_cloud_key", provider: "Yandex Cloud", desc: "Yandex Cloud API key (AQVN…) or IAM token (t1.….<86>)",
			keywords: []string{"aqvn", "t1."}, after: 400, prefix: 4, entropy: 3.5,
			patterns: []string{`AQVN[A-Za-z0-9_-]{35,38}`, `(t1\.[A-Za-z0-9_-]{10,}={0,2}\.[A-Za-z0-9_-]{86}={0,2})`}},

		// ---- developer platforms and registries ----
		{id: "secret.artifactory_token", provider: "JFrog Artifactory", desc: "Artifactory API key (AKCp + 69) or reference token (base64 reftkn:…)",
			check: "reference tokens decode to reftkn:", keywords: []string{"akcp", "cmvmdgtu"}, after: 70, token: isB64TokenByte, prefix: 4, entropy: 3.5, valid: validArtifactory,
			patterns: []string{`AKCp[A-Za-z0-9]{69}|cmVmdGtu[A-Za-z0-9+/]{56}`}},
		{id: "secret.atlassian_api_token", provider: "Atlassian", desc: "Atlassian (Jira, Confluence, Bitbucket) API token (ATATT3 + 186)",
			keywords: []string{"atatt3"}, after: 186, prefix: 6, entropy: 4.0, token: isB64TokenByte, patterns: []string{`ATATT3[A-Za-z0-9_=-]{186}`}},
		{id: "secret.buildkite_token", provider: "Buildkite", desc: "Buildkite API access token (bkua_ + 40 hex)",
			keywords: []string{"bkua_"}, after: 40, prefix: 5, entropy: 3.0, patterns: []string{`bkua_[a-f0-9]{40}`}},
		{id: "secret.circleci_token", provider: "CircleCI", desc: "CircleCI personal API token (CCIPAT_<22>_<40 hex>)",
			keywords: []string{"ccipat_"}, after: 63, prefix: 7, entropy: 3.5, patterns: []string{`CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}`}},
		{id: "secret.clojars_token", provider: "Clojars", desc: "Clojars deploy token (CLOJARS_ + 60)",
			check: "letters and digits", keywords: []string{"clojars_"}, after: 60, prefix: 8, entropy: 3.5, valid: lettersAndDigits, patterns: []string{`CLOJARS_[a-z0-9]{60}`}},
		{id: "secret.databricks_token", provider: "Databricks", desc: "Databricks personal access token (dapi + 32 hex)",
			keywords: []string{"dapi"}, after: 36, prefix: 4, entropy: 3.0, patterns: []string{`dapi[a-f0-9]{32}(?:-[0-9])?`}},
		{id: "secret.docker_token", provider: "Docker Hub", desc: "Docker Hub personal or organisation access token (dckr_pat_/dckr_oat_)",
			keywords: []string{"dckr_pat_", "dckr_oat_"}, after: 32, prefix: 9, entropy: 3.5, patterns: []string{`dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,32}`}},
		{id: "secret.doppler_token", provider: "Doppler", desc: "Doppler personal, service, service-account, CLI, SCIM or audit token (dp.pt./dp.st./…)",
			keywords: []string{"dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."}, after: 90, prefix: 6, entropy: 3.5,
			patterns: []string{`dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,44}`}},
		{id: "secret.gitlab_runner_registration_token", provider: "GitLab", desc: "GitLab runner registration token (GR1348941 + 20)",
			keywords: []string{"gr1348941"}, after: 20, prefix: 9, entropy: 3.5, patterns: []string{`GR1348941[A-Za-z0-9_-]{20}`}},
		{id: "secret.gitlab_session_cookie", provider: "GitLab", desc: "GitLab session cookie (_gitlab_session=<32 hex>)",
			check: "letters and digits", keywords: []string{"_gitlab_session="}, after: 32, entropy: 3.0, valid: lettersAndDigits, patterns: []string{`_gitlab_session=([0-9a-z]{32})`}},
		{id: "secret.grafana_cloud_token", provider: "Grafana", desc: "Grafana Cloud access policy token (glc_ + base64 JSON)",
			check: "base64 body decodes to a JSON object with a key \"k\"", keywords: []string{"glc_"}, after: 400, token: isB64TokenByte, prefix: 4, entropy: 4.0,
			valid: b64JSONWith(4, "k"), patterns: []string{`glc_[A-Za-z0-9+/]{32,}={0,2}`}},
		{id: "secret.grafana_service_account_token", provider: "Grafana", desc: "Grafana service account token (glsa_<32>_<8 hex>)",
			keywords: []string{"glsa_"}, after: 41, prefix: 5, entropy: 3.5, patterns: []string{`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`}},
		{id: "secret.grafana_api_key", provider: "Grafana", desc: "Grafana legacy API key (base64 JSON {\"k\":…})",
			check: "decodes to a JSON object with \"k\" and \"n\"", keywords: []string{"eyjrijoi"}, after: 400, token: isB64TokenByte, prefix: 8, entropy: 4.0,
			valid: b64JSONWith(0, "k", "n"), patterns: []string{`eyJrIjoi[A-Za-z0-9+/]{70,}={0,3}`}},
		{id: "secret.huggingface_token", provider: "Hugging Face", desc: "Hugging Face user or organisation token (hf_/api_org_ + 34 letters)",
			keywords: []string{"hf_", "api_org_"}, after: 34, prefix: 3, entropy: 4.0, patterns: []string{`hf_[A-Za-z]{34}|api_org_[A-Za-z]{34}`}},
		{id: "secret.netlify_token", provider: "Netlify", desc: "Netlify personal access token (nfp_ + 36) or a token assigned to a Netlify-named key",
			keywords: []string{"nfp_", "netlify"}, after: nameReach, prefix: 4, entropy: 3.5,
			patterns: []string{`nfp_[A-Za-z0-9]{36}`, assigned(`netlify`, `[A-Za-z0-9_-]{40,46}`)}},
		{id: "secret.nuget_key", provider: "NuGet", desc: "NuGet.org API key (oy2 + 43)",
			check: "letters and digits", keywords: []string{"oy2"}, after: 43, prefix: 3, entropy: 3.5, valid: lettersAndDigits, patterns: []string{`oy2[a-z0-9]{43}`}},
		{id: "secret.onepassword_secret_key", provider: "1Password", desc: "1Password account Secret Key (A3-XXXXXX-…)",
			keywords: []string{"a3-"}, after: 40, prefix: 3, entropy: 3.0,
			patterns: []string{`A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}`}},
		{id: "secret.onepassword_service_account_token", provider: "1Password", desc: "1Password service account token (ops_ + base64 JSON)",
			check: "base64 body decodes to a JSON object", keywords: []string{"ops_eyj"}, after: 2000, token: isB64TokenByte, prefix: 4, entropy: 4.0,
			valid: b64JSONWith(4), patterns: []string{`ops_eyJ[A-Za-z0-9+/]{250,}={0,3}`}},
		{id: "secret.planetscale_token", provider: "PlanetScale", desc: "PlanetScale service token, OAuth token or database password (pscale_tkn_/pscale_oauth_/pscale_pw_)",
			keywords: []string{"pscale_"}, after: 70, prefix: 7, entropy: 3.5, patterns: []string{`pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}`}},
		{id: "secret.postman_key", provider: "Postman", desc: "Postman API key (PMAK-<24 hex>-<34 hex>)",
			keywords: []string{"pmak-"}, after: 60, prefix: 5, entropy: 3.0, patterns: []string{`PMAK-[a-f0-9]{24}-[a-f0-9]{34}`}},
		{id: "secret.prefect_key", provider: "Prefect", desc: "Prefect API key (pnu_ + 36)",
			keywords: []string{"pnu_"}, after: 36, prefix: 4, entropy: 3.5, patterns: []string{`pnu_[A-Za-z0-9]{36}`}},
		{id: "secret.pulumi_token", provider: "Pulumi", desc: "Pulumi access token (pul- + 40 hex)",
			keywords: []string{"pul-"}, after: 40, prefix: 4, entropy: 3.0, patterns: []string{`pul-[a-f0-9]{40}`}},
		{id: "secret.pypi_token", provider: "PyPI", desc: "PyPI upload token (pypi- + base64url macaroon for pypi.org or test.pypi.org)",
			check: "macaroon decodes: version 2, location pypi.org or test.pypi.org, an identifier field", keywords: []string{"pypi-age"}, after: 1200, prefix: 5, entropy: 3.5,
			valid: validPyPIToken, patterns: []string{`pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}`}},
		{id: "secret.readme_key", provider: "ReadMe", desc: "ReadMe API key (rdme_ + 70)",
			check: "letters and digits", keywords: []string{"rdme_"}, after: 70, prefix: 5, entropy: 3.5, valid: lettersAndDigits, patterns: []string{`rdme_[a-z0-9]{70}`}},
		{id: "secret.render_key", provider: "Render", desc: "Render API key (rnd_ + 32)",
			keywords: []string{"rnd_"}, after: 32, prefix: 4, entropy: 3.5, patterns: []string{`rnd_[A-Za-z0-9]{32}`}},
		{id: "secret.rubygems_key", provider: "RubyGems", desc: "RubyGems API key (rubygems_ + 48 hex)",
			keywords: []string{"rubygems_"}, after: 48, prefix: 9, entropy: 3.0, patterns: []string{`rubygems_[a-f0-9]{48}`}},
		{id: "secret.scalingo_token", provider: "Scalingo", desc: "Scalingo API token (tk-us- + 48)",
			keywords: []string{"tk-us-"}, after: 48, prefix: 6, entropy: 3.5, patterns: []string{`tk-us-[A-Za-z0-9_-]{48}`}},
		{id: "secret.sonarqube_token", provider: "SonarQube", desc: "SonarQube user, project or global analysis token (squ_/sqp_/sqa_ + 40 hex)",
			keywords: []string{"squ_", "sqp_", "sqa_"}, after: 40, prefix: 4, entropy: 3.0, patterns: []string{`sq[upa]_[a-f0-9]{40}`}},
		{id: "secret.sourcegraph_token", provider: "Sourcegraph", desc: "Sourcegraph access token (sgp_…)",
			keywords: []string{"sgp_"}, after: 62, prefix: 4, entropy: 3.0, patterns: []string{`sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}`}},
		{id: "secret.snyk_token", provider: "Snyk", desc: "Snyk API token (a UUID assigned to a Snyk-named key)",
			keywords: []string{"snyk"}, after: nameReach, entropy: 3.0, patterns: []string{assigned(`snyk`, uuidPattern)}},
		{id: "secret.supabase_key", provider: "Supabase", desc: "Supabase management token (sbp_ + 40 hex) or secret API key (sb_secret_…)",
			keywords: []string{"sbp_", "sb_secret_"}, after: 60, prefix: 4, entropy: 3.0, patterns: []string{`sbp_(?:v0_)?[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{31,50}`}},
		{id: "secret.vercel_token", provider: "Vercel", desc: "Vercel access token (24 characters assigned to a Vercel-named key)",
			keywords: []string{"vercel"}, after: nameReach, entropy: 3.5, patterns: []string{assigned(`vercel`, `[A-Za-z0-9]{24}`)}},

		// ---- AI providers ----
		{id: "secret.groq_key", provider: "Groq", desc: "Groq API key (gsk_ + 52)",
			keywords: []string{"gsk_"}, after: 52, prefix: 4, entropy: 4.0, patterns: []string{`gsk_[A-Za-z0-9]{52}`}},
		{id: "secret.langsmith_key", provider: "LangChain LangSmith", desc: "LangSmith API key (lsv2_pt_/lsv2_sk_<32 hex>_<10 hex>)",
			keywords: []string{"lsv2_"}, after: 51, prefix: 8, entropy: 3.0, patterns: []string{`lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`}},
		{id: "secret.openrouter_key", provider: "OpenRouter", desc: "OpenRouter API key (sk-or-v1- + 64 hex)",
			keywords: []string{"sk-or-v1-"}, after: 64, prefix: 9, entropy: 3.0, patterns: []string{`sk-or-v1-[a-f0-9]{64}`}},
		{id: "secret.perplexity_key", provider: "Perplexity", desc: "Perplexity API key (pplx- + 48)",
			keywords: []string{"pplx-"}, after: 48, prefix: 5, entropy: 4.0, patterns: []string{`pplx-[A-Za-z0-9]{48}`}},
		{id: "secret.pinecone_key", provider: "Pinecone", desc: "Pinecone API key (pcsk_<id>_<secret>)",
			keywords: []string{"pcsk_"}, after: 90, prefix: 5, entropy: 4.0, patterns: []string{`pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{50,80}`}},
		{id: "secret.replicate_token", provider: "Replicate", desc: "Replicate API token (r8_ + 37)",
			keywords: []string{"r8_"}, after: 37, prefix: 3, entropy: 4.0, patterns: []string{`r8_[A-Za-z0-9]{37}`}},
		{id: "secret.xai_key", provider: "xAI", desc: "xAI (Grok) API key (xai- + 80)",
			keywords: []string{"xai-"}, after: 80, prefix: 4, entropy: 4.0, patterns: []string{`xai-[A-Za-z0-9]{80}`}},

		// ---- collaboration, messaging, webhooks ----
		{id: "secret.discord_bot_token", provider: "Discord", desc: "Discord bot token near the word Discord (<base64 user ID>.<6>.<27-40>)",
			check: "first part decodes to a 17-20 digit user ID", keywords: []string{"discord"}, before: nameReach, after: nameReach, entropy: 3.5, valid: validDiscordBotToken,
			patterns: []string{`[MNO][A-Za-z0-9_-]{22,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}`}},
		{id: "secret.discord_webhook", provider: "Discord", desc: "Discord webhook URL (with or without scheme)",
			keywords: []string{"discord.com/api", "discordapp.com/api"}, before: 20, after: 120, token: isAlnum, entropy: 3.5,
			patterns: []string{`(?:https?://)?(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api(?:/v[0-9]{1,2})?/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,68})`}},
		{id: "secret.linear_key", provider: "Linear", desc: "Linear API key or OAuth token (lin_api_/lin_oauth_ + 40)",
			keywords: []string{"lin_api_", "lin_oauth_"}, after: 50, prefix: 8, entropy: 4.0, patterns: []string{`lin_(?:api|oauth)_[A-Za-z0-9]{40}`}},
		{id: "secret.notion_token", provider: "Notion", desc: "Notion integration token (ntn_ + 11 digits + 35)",
			keywords: []string{"ntn_"}, after: 46, prefix: 4, entropy: 3.5, patterns: []string{`ntn_[0-9]{11}[A-Za-z0-9]{35}`}},
		{id: "secret.sentry_org_token", provider: "Sentry", desc: "Sentry organisation auth token (sntrys_ + base64 JSON + _ + 43)",
			check: "the middle part decodes to a JSON object with \"iat\"", keywords: []string{"sntrys_"}, after: 700, token: isB64TokenByte, prefix: 7, entropy: 4.0,
			valid: validSentryOrgToken, patterns: []string{`sntrys_eyJ[A-Za-z0-9+/]{20,}={0,2}_[A-Za-z0-9+/]{43}`}},
		{id: "secret.sentry_user_token", provider: "Sentry", desc: "Sentry user auth token (sntryu_ + 64 hex)",
			keywords: []string{"sntryu_"}, after: 64, prefix: 7, entropy: 3.0, patterns: []string{`sntryu_[a-f0-9]{64}`}},
		{id: "secret.slack_config_token", provider: "Slack", desc: "Slack app configuration access or refresh token (xoxe.xoxp-… / xoxe-…)",
			keywords: []string{"xoxe"}, after: 180, prefix: 5, entropy: 4.0,
			patterns: []string{`xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{163,166}|xoxe-[0-9]-[A-Za-z0-9]{146}`}},
		{id: "secret.teams_webhook", provider: "Microsoft Teams / Power Automate", desc: "Microsoft Teams incoming webhook or Power Automate workflow URL (with or without scheme)",
			keywords: []string{".webhook.office.com/webhookb2/", ".logic.azure.com"}, before: 70, after: 400, token: isAlnum, entropy: 3.0,
			patterns: []string{`(?:https://)?[A-Za-z0-9-]{1,63}\.webhook\.office\.com/webhookb2/[0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/([0-9a-f]{32})/[0-9a-f-]{36}`,
				`(?:https://)?prod-[0-9]{1,3}\.[a-z0-9]{2,30}\.logic\.azure\.com(?::443)?/workflows/[0-9a-f]{32}/triggers/manual/paths/invoke\?[A-Za-z0-9=&%._-]{0,120}sig=([A-Za-z0-9_-]{43})`}},
		{id: "secret.telegram_bot_token", provider: "Telegram", desc: "Telegram bot token (<8-10 digit bot ID>:AA + 33)",
			keywords: []string{":aa"}, before: 11, after: 36, entropy: 3.5, patterns: []string{`[0-9]{8,10}:AA[A-Za-z0-9_-]{33}`}},
		{id: "secret.twitch_token", provider: "Twitch", desc: "Twitch chat OAuth token (oauth: + 30) or a token assigned to a Twitch-named key",
			check: "letters and digits", keywords: []string{"oauth:", "twitch"}, after: nameReach, prefix: 6, entropy: 3.5, valid: lettersAndDigits,
			patterns: []string{`oauth:[a-z0-9]{30}`, assigned(`twitch`, `[a-z0-9]{30}`)}},

		// ---- commerce, e-mail, monitoring ----
		{id: "secret.adobe_client_secret", provider: "Adobe", desc: "Adobe OAuth client secret (p8e- + 32)",
			keywords: []string{"p8e-"}, after: 32, prefix: 4, entropy: 3.5, patterns: []string{`p8e-[A-Za-z0-9]{32}`}},
		{id: "secret.brevo_key", provider: "Brevo (Sendinblue)", desc: "Brevo API key (xkeysib-<64 hex>-<16>)",
			keywords: []string{"xkeysib-"}, after: 81, prefix: 8, entropy: 3.0, patterns: []string{`xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}`}},
		{id: "secret.clickhouse_cloud_key", provider: "ClickHouse Cloud", desc: "ClickHouse Cloud API secret key (4b1d + 38)",
			keywords: []string{"4b1d"}, after: 38, prefix: 4, entropy: 3.5, patterns: []string{`4b1d[A-Za-z0-9]{38}`}},
		{id: "secret.contentful_token", provider: "Contentful", desc: "Contentful personal access token (CFPAT- + 43)",
			keywords: []string{"cfpat-"}, after: 43, prefix: 6, entropy: 3.5, patterns: []string{`CFPAT-[A-Za-z0-9_-]{43}`}},
		{id: "secret.datadog_key", provider: "Datadog", desc: "Datadog API key (32 hex) or application key (40 hex) assigned to a Datadog-named key or DD_API_KEY / DD_APP_KEY",
			keywords: []string{"datadog", "dd_api_key", "dd_app_key", "dd-api-key", "dd-application-key", "dd_application_key"}, after: nameReach, entropy: 3.0,
			patterns: []string{assigned(`datadog|dd[_-](?:api|app|application)[_-]key`, `[a-f0-9]{40}|[a-f0-9]{32}`)}},
		{id: "secret.duffel_token", provider: "Duffel", desc: "Duffel API token (duffel_test_/duffel_live_ + 43)",
			keywords: []string{"duffel_"}, after: 48, prefix: 12, entropy: 3.5, patterns: []string{`duffel_(?:test|live)_[A-Za-z0-9_=-]{43}`}},
		{id: "secret.dynatrace_token", provider: "Dynatrace", desc: "Dynatrace API token (dt0c01.<24>.<64>)",
			keywords: []string{"dt0c01."}, after: 90, prefix: 7, entropy: 3.5, patterns: []string{`dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}`}},
		{id: "secret.easypost_key", provider: "EasyPost", desc: "EasyPost production (EZAK) or test (EZTK) API key",
			keywords: []string{"ezak", "eztk"}, after: 54, prefix: 4, entropy: 3.5, patterns: []string{`EZ[AT]K[A-Za-z0-9]{54}`}},
		{id: "secret.facebook_access_token", provider: "Meta (Facebook)", desc: "Facebook / Instagram Graph API access token (EAA… + 100 or more)",
			keywords: []string{"eaa"}, after: 400, prefix: 3, entropy: 4.0, patterns: []string{`EAA[A-Z][A-Za-z0-9]{100,}`}},
		{id: "secret.flutterwave_key", provider: "Flutterwave", desc: "Flutterwave secret key (FLWSECK-/FLWSECK_TEST- + 32 + -X)",
			keywords: []string{"flwseck"}, after: 50, prefix: 8, entropy: 3.0, patterns: []string{`FLWSECK(?:_TEST)?-[a-f0-9]{32}-X`}},
		{id: "secret.frameio_token", provider: "Frame.io", desc: "Frame.io developer token (fio-u- + 64)",
			keywords: []string{"fio-u-"}, after: 64, prefix: 6, entropy: 3.5, patterns: []string{`fio-u-[A-Za-z0-9_=-]{64}`}},
		{id: "secret.infracost_key", provider: "Infracost", desc: "Infracost API key (ico- + 32)",
			keywords: []string{"ico-"}, after: 32, prefix: 4, entropy: 3.5, patterns: []string{`ico-[A-Za-z0-9]{32}`}},
		{id: "secret.mailchimp_key", provider: "Mailchimp", desc: "Mailchimp API key (32 hex + -us<datacenter>)",
			keywords: []string{"-us"}, before: 32, after: 2, entropy: 3.0, patterns: []string{`[a-f0-9]{32}-us[0-9]{1,2}`}},
		{id: "secret.mailgun_key", provider: "Mailgun", desc: "Mailgun private API key (key-<32 hex>) or <32>-<8>-<8> hex key near the word Mailgun",
			keywords: []string{"mailgun"}, before: nameReach, after: nameReach, entropy: 3.0,
			patterns: []string{`key-[a-f0-9]{32}|[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}`}},
		{id: "secret.mapbox_token", provider: "Mapbox", desc: "Mapbox secret access token (sk.eyJ….<22>)",
			check: "payload decodes to a JSON object with \"u\"", keywords: []string{"sk.eyj"}, after: 200, prefix: 3, entropy: 4.0, valid: validMapboxToken,
			patterns: []string{`sk\.eyJ[A-Za-z0-9_-]{10,150}\.[A-Za-z0-9_-]{22}`}},
		{id: "secret.maxmind_key", provider: "MaxMind", desc: "MaxMind license key (<6>_<29>_mmk)",
			keywords: []string{"_mmk"}, before: 37, after: 1, entropy: 3.5, patterns: []string{`[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk`}},
		{id: "secret.newrelic_key", provider: "New Relic", desc: "New Relic user API key (NRAK-), insert key (NRII-), browser key (NRJS-) or license key (…NRAL)",
			keywords: []string{"nrak-", "nrii-", "nrjs-", "nral"}, before: 37, after: 40, prefix: 5, entropy: 3.0,
			patterns: []string{`NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}`, `([a-f0-9]{36}NRAL)`}},
		{id: "secret.okta_token", provider: "Okta", desc: "Okta API token (00 + 40) assigned to an Okta-named key",
			keywords: []string{"okta"}, after: nameReach, entropy: 3.5, patterns: []string{assigned(`okta`, `00[A-Za-z0-9_-]{40}`)}},
		{id: "secret.plaid_token", provider: "Plaid", desc: "Plaid access token (access-sandbox-/access-development-/access-production- + UUID)",
			keywords: []string{"access-sandbox-", "access-development-", "access-production-"}, after: 36, prefix: 7, entropy: 3.0,
			patterns: []string{`access-(?:sandbox|development|production)-` + uuidPattern}},
		{id: "secret.shippo_token", provider: "Shippo", desc: "Shippo API token (shippo_live_/shippo_test_ + 40 hex)",
			keywords: []string{"shippo_"}, after: 45, prefix: 12, entropy: 3.0, patterns: []string{`shippo_(?:live|test)_[a-f0-9]{40}`}},
		{id: "secret.shopify_token", provider: "Shopify", desc: "Shopify access token or shared secret (shpat_/shpca_/shppa_/shpss_ + 32 hex)",
			keywords: []string{"shpat_", "shpca_", "shppa_", "shpss_"}, after: 32, prefix: 6, entropy: 3.0, patterns: []string{`shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`}},
		{id: "secret.square_token", provider: "Square", desc: "Square access token (EAAA + 60, sq0atp-) or OAuth secret (sq0csp-)",
			keywords: []string{"eaaa", "sq0atp-", "sq0csp-"}, after: 64, prefix: 4, entropy: 3.5,
			patterns: []string{`EAAA[A-Za-z0-9_-]{60}|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}`}},
		{id: "secret.webhook_signing_secret", provider: "Stripe, Svix (Standard Webhooks)", desc: "Webhook signing secret (whsec_ + 32 or more)",
			keywords: []string{"whsec_"}, after: 64, token: isB64TokenByte, prefix: 6, entropy: 3.5, patterns: []string{`whsec_[A-Za-z0-9+/]{32,64}`}},
		{id: "secret.typeform_token", provider: "Typeform", desc: "Typeform personal access token (tfp_ + 59)",
			keywords: []string{"tfp_"}, after: 59, prefix: 4, entropy: 3.5, patterns: []string{`tfp_[A-Za-z0-9_.=-]{59}`}},

		// ---- keys, generic credentials ----
		{id: "secret.age_secret_key", provider: "age", desc: "age encryption secret key (AGE-SECRET-KEY-1 + 58 bech32)",
			check: "bech32 checksum", keywords: []string{"age-secret-key-1"}, after: 58, prefix: 15, entropy: 3.5, valid: validAgeKey,
			patterns: []string{`AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`}},
		{id: "secret.basic_auth", provider: "HTTP", desc: "HTTP Basic credentials after Authorization (a header, or a key in JSON, YAML or code)",
			check: "decodes to user:password, the password neither a placeholder nor a name in capitals", keywords: []string{"authorization"}, after: 420, token: isB64TokenByte, entropy: 3.0, valid: validBasicAuth,
			patterns: []string{`(?i:authorization)["']?[ \t]*[:=][ \t]*["']?[Bb]asic[ \t]+([A-Za-z0-9+/]{8,}={0,2})`}},
		{id: "secret.bearer_token", provider: "HTTP", desc: "Bearer token (an Authorization header, an HTTP client call, a Kubernetes or CI config): upper and lower case letters and digits, entropy floor",
			check: "three character classes", keywords: []string{"bearer"}, after: 1200, token: isB64TokenByte, entropy: 3.5, valid: validBearer, conf: 0.75,
			patterns: []string{`[Bb]earer[ \t]+([A-Za-z0-9._~+/-]{20,}={0,2})`}},
	}
}

// decodeB64 decodes standard or URL-safe base64, padded or not.
func decodeB64(s string) ([]byte, bool) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, true
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return b, err == nil
}

// b64JSONWith returns a check that v[skip:] is base64 of a JSON object
// holding every one of keys.
func b64JSONWith(skip int, keys ...string) func(string) bool {
	return func(v string) bool {
		return jsonObjectWith(v[skip:], keys...)
	}
}

func jsonObjectWith(b64 string, keys ...string) bool {
	raw, ok := decodeB64(b64)
	if !ok {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

// validBedrockKey: a long-term key is ABSK + base64("BedrockAPIKey-…"); a
// short-term one is bedrock-api-key- + base64 of a presigned URL.
func validBedrockKey(v string) bool {
	if body, ok := strings.CutPrefix(v, "ABSK"); ok {
		raw, err := base64.StdEncoding.DecodeString(body[:20])
		return err == nil && strings.HasPrefix(string(raw), "BedrockAPIKey-")
	}
	body := strings.TrimPrefix(v, "bedrock-api-key-")
	raw, ok := decodeB64(body[:len(body)/4*4])
	return ok && strings.HasPrefix(string(raw), "bedrock.amazonaws.com/") && strings.Contains(string(raw), "X-Amz-")
}

// validArtifactory: API keys (AKCp) carry no structure to check;
// reference tokens decode to "reftkn:".
func validArtifactory(v string) bool {
	if strings.HasPrefix(v, "AKCp") {
		return true
	}
	raw, err := base64.StdEncoding.DecodeString(v[:16])
	return err == nil && string(raw[:7]) == "reftkn:"
}

// validSentryOrgToken: sntrys_<base64 JSON>_<secret>, the JSON carrying
// the token's issue time.
func validSentryOrgToken(v string) bool {
	mid := v[len("sntrys_") : len(v)-44]
	return jsonObjectWith(mid, "iat")
}

// validMapboxToken: sk.<base64url JSON with the user>.<secret>.
func validMapboxToken(v string) bool {
	parts := strings.Split(v, ".")
	return len(parts) == 3 && jsonObjectWith(parts[1], "u")
}

// validPyPIToken decodes the macaroon after "pypi-": format version 2,
// a location field (type 1) naming pypi.org or test.pypi.org, then an
// identifier field (type 2).
func validPyPIToken(v string) bool {
	raw, ok := decodeB64(v[len("pypi-"):])
	if !ok || len(raw) < 4 || raw[0] != 2 || raw[1] != 1 {
		return false
	}
	n := int(raw[2])
	if 3+n >= len(raw) {
		return false
	}
	loc := string(raw[3 : 3+n])
	return (loc == "pypi.org" || loc == "test.pypi.org") && raw[3+n] == 2
}

// validDiscordBotToken: the first part is the bot's user ID (a
// snowflake of 17 to 20 digits) in base64.
func validDiscordBotToken(v string) bool {
	first, _, _ := strings.Cut(v, ".")
	raw, ok := decodeB64(first)
	if !ok || len(raw) < 17 || len(raw) > 20 {
		return false
	}
	for _, c := range raw {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// validBasicAuth: the credentials decode to user:password, printable, with
// a password.
func validBasicAuth(v string) bool {
	raw, ok := decodeB64(v)
	if !ok {
		return false
	}
	user, pass, found := bytes.Cut(raw, []byte(":"))
	if !found || len(user) == 0 || len(pass) == 0 {
		return false
	}
	for _, c := range raw {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return len(pass) < 4 || !(placeholderValue(string(pass)) || upperName(pass))
}

// upperName reports a name written in capitals and underscores
// (CLIENT_SECRET, PASSWORD): what documentation and tests put where a
// credential goes.
func upperName[T ~string | ~[]byte](v T) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return len(v) > 0
}

// lettersAndDigits: a random value drawn from letters and digits holds
// both (a lower-case word or a number is not one).
func lettersAndDigits(v string) bool {
	var l, d bool
	for i := 0; i < len(v); i++ {
		l = l || isAlpha(v[i])
		d = d || isDigit(v[i])
	}
	return l && d
}

// validBearer: a token, not a word: upper and lower case letters and
// digits, and not a placeholder.
func validBearer(v string) bool {
	var l, u, d bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		l = l || (c >= 'a' && c <= 'z')
		u = u || (c >= 'A' && c <= 'Z')
		d = d || isDigit(c)
	}
	return l && u && d && !placeholderValue(v)
}

// validAgeKey checks the bech32 checksum (BIP 173) of an age secret key,
// human-readable part "age-secret-key-".
func validAgeKey(v string) bool {
	low := strings.ToLower(v)
	sep := strings.LastIndexByte(low, '1')
	if sep < 1 {
		return false
	}
	hrp := low[:sep]
	vals := make([]byte, 0, 2*len(hrp)+1+len(low)-sep-1)
	for i := 0; i < len(hrp); i++ {
		vals = append(vals, hrp[i]>>5)
	}
	vals = append(vals, 0)
	for i := 0; i < len(hrp); i++ {
		vals = append(vals, hrp[i]&31)
	}
	for i := sep + 1; i < len(low); i++ {
		k := strings.IndexByte(bech32Charset, low[i])
		if k < 0 {
			return false
		}
		vals = append(vals, byte(k))
	}
	return bech32Polymod(vals) == 1
}

// curlReach bounds how far after "curl" a command's options are read.
const curlReach = 2000

// curlWindow returns the window function that reads every curl command that starts in [lo, hi): up to its
// end (a newline not escaped by a backslash, curlReach bytes at most), it
// reports the password of -u user:password and the credential of an
// Authorization header (after its scheme: Bearer, Basic, Token, …) or of a
// header whose name says token, key or secret. Each byte is read once per
// command. curlUser and curlHeader match the -u and -H options.
func curlWindow(curlUser, curlHeader func() *regexp.Regexp) func(st *scanState, d *detector, lo, hi int) {
	return func(st *scanState, d *detector, lo, hi int) {
		text := st.text
		for pos := lo; pos < hi; {
			k := bytes.Index(text[pos:hi], []byte("curl"))
			if k < 0 {
				return
			}
			s := pos + k
			e := s + 4
			if (s > 0 && isWordByte(text[s-1])) || (e < len(text) && isWordByte(text[e])) {
				pos = e
				continue
			}
			end := e
			for end < len(text) && end-s < curlReach {
				if text[end] == '\n' && !(end > 0 && text[end-1] == '\\') && !(end > 1 && text[end-1] == '\r' && text[end-2] == '\\') {
					break
				}
				end++
			}
			cmd := text[e:end]
			for _, m := range curlUser().FindAllSubmatchIndex(cmd, -1) {
				a, b := firstGroup(m)
				if a < 0 {
					continue
				}
				cred := cmd[a:b]
				c := bytes.IndexByte(cred, ':')
				if c <= 0 || c == len(cred)-1 {
					continue // no password: curl asks for it
				}
				curlEmit(st, d, e+a+c+1, e+b)
			}
			for _, m := range curlHeader().FindAllSubmatchIndex(cmd, -1) {
				a, b := firstGroup(m)
				if a < 0 {
					continue
				}
				h := cmd[a:b]
				c := bytes.IndexByte(h, ':')
				if c <= 0 {
					continue
				}
				name := strings.ToLower(string(bytes.TrimSpace(h[:c])))
				vs := c + 1
				for vs < len(h) && (h[vs] == ' ' || h[vs] == '\t') {
					vs++
				}
				switch {
				case name == "authorization" || name == "proxy-authorization":
					if sp := bytes.IndexAny(h[vs:], " \t"); sp > 0 {
						vs += sp + 1
						for vs < len(h) && (h[vs] == ' ' || h[vs] == '\t') {
							vs++
						}
					}
				case strings.Contains(name, "token") || strings.Contains(name, "key") || strings.Contains(name, "secret") || strings.Contains(name, "auth"):
				default:
					continue
				}
				ve := len(h)
				for ve > vs && (h[ve-1] == ' ' || h[ve-1] == '\t') {
					ve--
				}
				if ve-vs >= 8 {
					curlEmit(st, d, e+a+vs, e+a+ve)
				}
			}
			pos = max(end, e)
		}
	}
}

// curlEmit reports text[lo:hi] unless it is a variable, template or
// placeholder, or holds no entropy.
func curlEmit(st *scanState, d *detector, lo, hi int) {
	v := st.text[lo:hi]
	if hi-lo < 3 || placeholderBytes(v) || upperName(v) || bytes.IndexByte(v, '$') >= 0 || maskRun(v) || shannon(v) < 2.0 {
		return
	}
	st.emit(d.idx, lo, hi, 0.85, v, maskFixed)
}

// firstGroup returns the span of the first matched group of m.
func firstGroup(m []int) (int, int) {
	for g := 1; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1]
		}
	}
	return -1, -1
}
