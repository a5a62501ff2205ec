package policies

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/inputfile"
)

// MaxPolicySize is the largest policy file Load and Parse accept.
const MaxPolicySize = 1 << 20

// The raw types mirror the file format; viper decodes into them and
// translate turns them into checked types. Only this file knows them.

type rawPolicy struct {
	Name         string           `mapstructure:"name"`
	Description  string           `mapstructure:"description"`
	Levels       []string         `mapstructure:"levels"`
	DefaultLevel string           `mapstructure:"default_level"`
	Classify     []rawLevelRule   `mapstructure:"classify"`
	Custom       []rawCustomRule  `mapstructure:"custom"`
	Scan         rawScan          `mapstructure:"scan"`
	Destinations []rawDestination `mapstructure:"destinations"`
	Default      *rawDestination  `mapstructure:"default"`
	FailureMode  string           `mapstructure:"failure_mode"`
	Inbound      rawInbound       `mapstructure:"inbound"`
	Redaction    rawRedaction     `mapstructure:"redaction"`
	Audit        rawAudit         `mapstructure:"audit"`
	Quarantine   *rawQuarantine   `mapstructure:"quarantine"`
}

type rawLevelRule struct {
	Detectors []string `mapstructure:"detectors"`
	Level     string   `mapstructure:"level"`
}

type rawCustomRule struct {
	ID            string   `mapstructure:"id"`
	Description   string   `mapstructure:"description"`
	Keywords      []string `mapstructure:"keywords"`
	CaseSensitive bool     `mapstructure:"case_sensitive"`
	Pattern       string   `mapstructure:"pattern"`
	Validator     string   `mapstructure:"validator"`
	ContextWords  []string `mapstructure:"context_words"`
	Confidence    float64  `mapstructure:"confidence"`
	Level         string   `mapstructure:"level"`
}

type rawScan struct {
	Detectors       []string `mapstructure:"detectors"`
	IncludeReserved bool     `mapstructure:"include_reserved"`
	MatchTimeout    string   `mapstructure:"match_timeout"`
	Allow           []string `mapstructure:"allow"`
}

type rawDestination struct {
	Name            string         `mapstructure:"name"`
	BaseURL         string         `mapstructure:"base_url"`
	Provider        string         `mapstructure:"provider"`
	Model           string         `mapstructure:"model"`
	MaxLevel        string         `mapstructure:"max_level"`
	Action          string         `mapstructure:"action"`
	BlockAt         string         `mapstructure:"block_at"`
	MaxInputTokens  int            `mapstructure:"max_input_tokens"`
	Tokenizer       string         `mapstructure:"tokenizer"`
	Shared          bool           `mapstructure:"shared"`
	Contract        bool           `mapstructure:"contract"`
	IncidentContact string         `mapstructure:"incident_contact"`
	Passthrough     []string       `mapstructure:"passthrough"`
	Quarantine      *rawQuarantine `mapstructure:"quarantine"`
}

type rawInbound struct {
	Signals   map[string]string `mapstructure:"signals"`
	AllowList []string          `mapstructure:"allow_list"`
	Sourced   []string          `mapstructure:"sourced"`
	Canary    bool              `mapstructure:"canary"`
	// PrivateInstructions: see Inbound.PrivateInstructions.
	PrivateInstructions bool   `mapstructure:"private_instructions"`
	FingerprintTTL      string `mapstructure:"fingerprint_ttl"`
	MaxExchanges        int    `mapstructure:"max_exchanges"`
	MaxMemory           string `mapstructure:"max_memory"`
}

type rawRedaction struct {
	Style string `mapstructure:"style"`
}

type rawAudit struct {
	Enabled bool   `mapstructure:"enabled"`
	Path    string `mapstructure:"path"`
}

// Load reads a policy file. The format follows the extension: .yaml/.yml,
// .json or .toml. Errors name the file and the field; errors.As finds a
// *LoadError listing every problem. A named pipe is read (it waits for a
// writer); use LoadContext to be able to stop that wait.
func Load(path string) (*Policy, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load, stopped when ctx is done: a policy read from a named
// pipe (a process substitution, say) may wait for its writer.
func LoadContext(ctx context.Context, path string) (*Policy, error) {
	format, err := formatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := readPolicyFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return Parse(data, format, path)
}

// readPolicyFile reads at most MaxPolicySize+1 bytes of a regular file or
// a named pipe (Parse refuses more); anything else is refused without
// being opened, and a pipe waiting for its writer is given up when ctx is
// done (inputfile.Open).
func readPolicyFile(ctx context.Context, path string) ([]byte, error) {
	f, err := inputfile.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxPolicySize+1)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// formatOf returns the format of a policy file from its extension.
func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".json":
		return "json", nil
	case ".toml":
		return "toml", nil
	}
	return "", &LoadError{File: path, Problems: []*FieldError{{File: path, Code: "unknown-format",
		Message: "unknown policy format: the file name must end in .yaml, .yml, .json or .toml"}}}
}

// LoadRef loads ref as a file when a file by that name exists, else as a
// preset name.
func LoadRef(ref string) (*Policy, error) {
	return LoadRefContext(context.Background(), ref)
}

// LoadRefContext is LoadRef, stopped when ctx is done (see LoadContext).
func LoadRefContext(ctx context.Context, ref string) (*Policy, error) {
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		return LoadContext(ctx, ref)
	}
	if slices.Contains(Presets(), ref) {
		return Preset(ref)
	}
	if strings.ContainsAny(ref, `/\.`) {
		return nil, fmt.Errorf("policy %s: no such file, and not a preset (presets: %s)", ref, strings.Join(Presets(), ", "))
	}
	return nil, &UnknownPresetError{Name: ref}
}

// Parse reads a policy from data in format ("yaml", "json" or "toml"; ""
// means yaml). name is the file name errors refer to.
func Parse(data []byte, format, name string) (*Policy, error) {
	if name == "" {
		name = "policy"
	}
	problem := func(code, msg string) error {
		return &LoadError{File: name, Problems: []*FieldError{{File: name, Code: code, Message: msg}}}
	}
	switch format {
	case "", "yml":
		format = "yaml"
	case "yaml", "json", "toml":
	default:
		return nil, problem("unknown-format", fmt.Sprintf("unknown policy format %q (yaml, json or toml)", format))
	}
	if len(data) > MaxPolicySize {
		return nil, problem("too-large", fmt.Sprintf("policy is larger than %d bytes", MaxPolicySize))
	}
	if !utf8.Valid(data) {
		return nil, problem("syntax", "policy is not valid UTF-8")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, problem("syntax", "policy contains a NUL byte")
	}
	raw, md, err := decode(data, format)
	var problems []*FieldError
	for _, k := range md.Unused {
		problems = append(problems, &FieldError{File: name, Field: k, Code: "unknown-field", Message: "unknown field"})
	}
	if err != nil {
		dp := decodeProblems(name, err)
		problems = append(problems, dp...)
		if !slices.ContainsFunc(dp, func(p *FieldError) bool { return p.Field == "" }) {
			// Every field that decoded is checked too, so that one run
			// shows every problem; those at or under a field that did not
			// decode follow from it and are left out.
			_, tp := translate(raw, name)
			for _, p := range tp {
				if !slices.ContainsFunc(dp, func(d *FieldError) bool { return fieldWithin(p.Field, d.Field) }) {
					problems = append(problems, p)
				}
			}
		}
		sortProblems(problems)
		return nil, &LoadError{File: name, Problems: problems}
	}
	p, tp := translate(raw, name)
	problems = append(problems, tp...)
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, &LoadError{File: name, Problems: problems}
	}
	return p, nil
}

// decode reads data with a fresh viper instance into a rawPolicy. A panic in
// a third-party parser on hostile input becomes an error.
func decode(data []byte, format string) (raw rawPolicy, md mapstructure.Metadata, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the %s parser failed on this input", format)
		}
	}()
	// "::" as key delimiter keeps dots in keys (such as detector IDs)
	// from being read as nesting.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType(format)
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return raw, md, err
	}
	err = v.Unmarshal(&raw, func(dc *mapstructure.DecoderConfig) {
		dc.Metadata = &md
		dc.ErrorUnused = false
		dc.WeaklyTypedInput = false
		dc.DecodeHook = wholeNumbers
	})
	return raw, md, err
}

// DecodeYAML decodes the YAML data of the file called path into out (a
// pointer to a struct with mapstructure tags) as policy files are decoded:
// through viper, strictly (an unknown field, a wrong type or a fraction
// where a whole number is expected is an error naming the field), and
// without letting a hostile input panic. Companion files of a policy (its
// test files) use it.
func DecodeYAML(data []byte, path string, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: the YAML parser failed on this input", path)
		}
	}()
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var md mapstructure.Metadata
	if err := v.Unmarshal(out, func(dc *mapstructure.DecoderConfig) {
		dc.Metadata = &md
		dc.WeaklyTypedInput = false
		dc.DecodeHook = wholeNumbers
	}); err != nil {
		var msgs []string
		for _, p := range decodeProblems(path, err) {
			msgs = append(msgs, p.Error())
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	if len(md.Unused) > 0 {
		slices.Sort(md.Unused)
		return fmt.Errorf("%s: unknown fields: %s", path, strings.Join(md.Unused, ", "))
	}
	return nil
}

// wholeNumbers refuses to truncate or overflow when a number the parser
// read as a float (JSON numbers, huge YAML integers) fills an int field.
func wholeNumbers(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.Int || (from.Kind() != reflect.Float64 && from.Kind() != reflect.Float32) {
		return data, nil
	}
	f := reflect.ValueOf(data).Float()
	switch {
	case f != math.Trunc(f) || math.IsNaN(f):
		return nil, fmt.Errorf("expected a whole number, got %v", f)
	case f >= math.MaxInt32*float64(1<<31) || f < -math.MaxInt32*float64(1<<31):
		return nil, fmt.Errorf("number %v is out of range", f)
	}
	return int(f), nil
}

// decodeProblems turns a viper or mapstructure error into field errors.
func decodeProblems(file string, err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			inner := de.Unwrap()
			var nested *mapstructure.DecodeError
			if !errors.As(inner, &nested) {
				out = append(out, &FieldError{File: file, Field: de.Name(), Code: "invalid-type", Message: inner.Error()})
				return
			}
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if de != nil {
			walk(de.Unwrap())
			return
		}
		msg := e.Error()
		msg = strings.TrimPrefix(msg, "While parsing config: ")
		out = append(out, &FieldError{File: file, Code: "syntax", Message: msg})
	}
	walk(err)
	sortProblems(out)
	return out
}

// fieldWithin reports whether field is outer or a field under it
// ("destinations[0].name" is within "destinations[0]" and "destinations").
func fieldWithin(field, outer string) bool {
	if !strings.HasPrefix(field, outer) {
		return false
	}
	rest := field[len(outer):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

func sortProblems(ps []*FieldError) {
	slices.SortStableFunc(ps, func(a, b *FieldError) int { return compareFieldPaths(a.Field, b.Field) })
}

// compareFieldPaths orders field paths as they appear in a file: indices
// numerically, names alphabetically.
func compareFieldPaths(a, b string) int {
	for a != "" && b != "" {
		ai, bi := strings.IndexAny(a, "[]."), strings.IndexAny(b, "[].")
		if ai < 0 {
			ai = len(a)
		}
		if bi < 0 {
			bi = len(b)
		}
		ta, tb := a[:ai], b[:bi]
		if ta != tb {
			na, ea := atoi(ta)
			nb, eb := atoi(tb)
			if ea && eb {
				return na - nb
			}
			return strings.Compare(ta, tb)
		}
		a, b = strings.TrimLeft(a[ai:], "[]."), strings.TrimLeft(b[bi:], "[].")
	}
	return len(a) - len(b)
}

func atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// translator accumulates problems while turning raw types into checked ones.
type translator struct {
	file     string
	problems []*FieldError
	levels   []string
}

func (t *translator) add(field, code, format string, args ...any) {
	t.problems = append(t.problems, &FieldError{File: t.file, Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// level checks that s names a declared level; empty is reported when
// required.
func (t *translator) level(field, s string, required bool) string {
	if s == "" {
		if required {
			t.add(field, "required", "a level is required (one of: %s)", strings.Join(t.levels, ", "))
		}
		return ""
	}
	if !slices.Contains(t.levels, s) {
		t.add(field, "undeclared-level", "level %q is not declared in levels (%s)", s, strings.Join(t.levels, ", "))
		return ""
	}
	return s
}

func (t *translator) duration(field, s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.add(field, "invalid-value", "%q is not a positive duration such as 100ms or 24h", s)
		return 0
	}
	return d
}

// MinMaxMemory is the smallest inbound.max_memory: 1 MiB.
const MinMaxMemory = 1 << 20

// ParseSize parses a size in bytes: a whole number followed by an optional
// unit, B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
// 1024), case-insensitive, with optional spaces (only) around the number and the unit:
// "536870912", "512MiB", "1 GB". Its errors quote at most the first 32
// bytes of s.
func ParseSize(s string) (int64, error) {
	t := strings.Trim(s, " ")
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	quoted := s
	if len(quoted) > 32 {
		quoted = quoted[:32] + "…"
	}
	bad := fmt.Errorf("%q is not a size such as 512MiB, 2GB or 1048576 (bytes)", quoted)
	if i == 0 || i > 18 {
		return 0, bad
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, bad
	}
	var mult int64
	switch strings.ToLower(strings.TrimLeft(t[i:], " ")) {
	case "", "b":
		mult = 1
	case "kb":
		mult = 1e3
	case "mb":
		mult = 1e6
	case "gb":
		mult = 1e9
	case "tb":
		mult = 1e12
	case "kib":
		mult = 1 << 10
	case "mib":
		mult = 1 << 20
	case "gib":
		mult = 1 << 30
	case "tib":
		mult = 1 << 40
	default:
		return 0, bad
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large a size", quoted)
	}
	return n * mult, nil
}

// translate checks raw and builds a Policy; the problems name fields.
func translate(raw rawPolicy, file string) (*Policy, []*FieldError) {
	t := &translator{file: file}
	p := &Policy{
		Name:            raw.Name,
		Description:     raw.Description,
		Source:          file,
		IncludeReserved: raw.Scan.IncludeReserved,
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}

	// Levels.
	if len(raw.Levels) == 0 {
		t.add("levels", "required", "at least one level is required, lowest first (for example public, internal, confidential, restricted)")
	}
	for i, l := range raw.Levels {
		f := fmt.Sprintf("levels[%d]", i)
		switch {
		case l == "" || strings.IndexFunc(l, unicode.IsSpace) >= 0:
			t.add(f, "invalid-value", "a level is a non-empty word without spaces")
		case slices.Contains(t.levels, l):
			t.add(f, "duplicate", "level %q is declared twice", l)
		case l == "off":
			t.add(f, "invalid-value", `"off" is reserved`)
		default:
			t.levels = append(t.levels, l)
		}
	}
	p.Levels = t.levels
	if raw.DefaultLevel != "" {
		p.DefaultLevel = t.level("default_level", raw.DefaultLevel, false)
	} else if len(t.levels) > 0 {
		p.DefaultLevel = t.levels[len(t.levels)-1]
	}

	// Classification.
	for i, r := range raw.Classify {
		f := fmt.Sprintf("classify[%d]", i)
		if len(r.Detectors) == 0 {
			t.add(f+".detectors", "required", "at least one detector ID or glob is required")
		}
		for j, d := range r.Detectors {
			if !validDetectorPattern(d) {
				t.add(fmt.Sprintf("%s.detectors[%d]", f, j), "invalid-value",
					"%q is not a detector ID or glob (lower-case letters, digits, '.', '_', '-', '*', '?')", d)
			}
		}
		p.Classify = append(p.Classify, LevelRule{Detectors: r.Detectors, Level: t.level(f+".level", r.Level, true), Field: f})
	}

	// Custom rules.
	validators := classifiers.Validators()
	seen := map[string]string{}
	for i, r := range raw.Custom {
		f := fmt.Sprintf("custom[%d]", i)
		switch {
		case r.ID == "":
			t.add(f+".id", "required", `an ID starting with "custom." is required`)
		case !strings.HasPrefix(r.ID, "custom.") || !validDetectorPattern(r.ID) || isGlob(r.ID):
			t.add(f+".id", "invalid-value", `%q must start with "custom." and use lower-case letters, digits, '.', '_' or '-'`, r.ID)
		case seen[r.ID] != "":
			t.add(f+".id", "duplicate", "ID %q is also used by %s", r.ID, seen[r.ID])
		default:
			seen[r.ID] = f
		}
		if len(r.Keywords) == 0 && r.Pattern == "" {
			t.add(f, "required", "a custom rule needs keywords, a pattern, or both")
		}
		for j, k := range r.Keywords {
			if strings.TrimSpace(k) == "" {
				t.add(fmt.Sprintf("%s.keywords[%d]", f, j), "invalid-value", "a keyword may not be empty")
			}
		}
		if r.Validator != "" && !slices.Contains(validators, r.Validator) {
			t.add(f+".validator", "unknown-validator", "unknown validator %q (validators: %s)", r.Validator, strings.Join(validators, ", "))
		}
		if r.Confidence < 0 || r.Confidence > 1 {
			t.add(f+".confidence", "invalid-value", "confidence must be between 0 and 1")
		}
		p.Custom = append(p.Custom, CustomRule{
			CustomRule: classifiers.CustomRule{
				ID: r.ID, Description: r.Description, Keywords: r.Keywords, CaseSensitive: r.CaseSensitive,
				Pattern: r.Pattern, Validator: r.Validator, ContextWords: r.ContextWords, Confidence: r.Confidence,
			},
			Level: t.level(f+".level", r.Level, true),
		})
		p.fields.custom = append(p.fields.custom, f)
	}

	// Scanning.
	for j, d := range raw.Scan.Detectors {
		if !validDetectorPattern(d) {
			t.add(fmt.Sprintf("scan.detectors[%d]", j), "invalid-value", "%q is not a detector ID or glob", d)
		}
	}
	p.Detectors = raw.Scan.Detectors
	p.MatchTimeout = t.duration("scan.match_timeout", raw.Scan.MatchTimeout)
	for j, a := range raw.Scan.Allow {
		if strings.TrimSpace(a) == "" {
			t.add(fmt.Sprintf("scan.allow[%d]", j), "invalid-value", "an allow entry is a value, not an empty string")
		}
	}
	p.Allow = raw.Scan.Allow

	// Destinations.
	names := map[string]string{}
	for i, r := range raw.Destinations {
		f := fmt.Sprintf("destinations[%d]", i)
		d := t.destination(f, r)
		if d.Name != "" {
			if d.Name == "default" {
				t.add(f+".name", "invalid-value", `"default" is reserved: declare it under default:`)
			} else if prev, dup := names[d.Name]; dup {
				t.add(f+".name", "duplicate", "destination %q is also declared at %s", d.Name, prev)
			}
			names[d.Name] = f
		}
		p.Destinations = append(p.Destinations, d)
		p.fields.destinations = append(p.fields.destinations, f)
	}
	if raw.Default != nil {
		r := *raw.Default
		if r.Name != "" && r.Name != "default" {
			t.add("default.name", "invalid-value", `the default destination is always named "default"`)
		}
		r.Name = "default"
		if r.BaseURL != "" || r.Provider != "" || r.Model != "" {
			t.add("default", "invalid-value", "the default destination matches everything: base_url, provider and model do not apply")
		}
		p.Default = t.destination("default", r)
	} else {
		// Fail closed: unmatched destinations receive only the lowest level.
		low := ""
		if len(t.levels) > 0 {
			low = t.levels[0]
		}
		p.Default = &Destination{Name: "default", MaxLevel: low, Action: ActionBlock, Field: "default"}
	}

	switch raw.FailureMode {
	case "", "closed":
	case "open":
		p.FailOpen = true
	default:
		t.add("failure_mode", "invalid-value", "failure_mode is closed (the default) or open, not %q", raw.FailureMode)
	}

	// Inbound.
	p.Inbound = Inbound{AllowList: raw.Inbound.AllowList, Sourced: raw.Inbound.Sourced, Canary: raw.Inbound.Canary,
		MaxExchanges: raw.Inbound.MaxExchanges, PrivateInstructions: raw.Inbound.PrivateInstructions}
	for j, d := range raw.Inbound.Sourced {
		known := slices.ContainsFunc(classifiers.Builtins(), func(b classifiers.DetectorInfo) bool { return b.ID == d }) ||
			slices.ContainsFunc(p.Custom, func(c CustomRule) bool { return c.ID == d })
		if !known {
			t.add(fmt.Sprintf("inbound.sourced[%d]", j), "unknown-detector", "%q is not a built-in detector ID nor a custom rule's", d)
		}
	}
	p.Inbound.FingerprintTTL = t.duration("inbound.fingerprint_ttl", raw.Inbound.FingerprintTTL)
	if raw.Inbound.MaxExchanges < 0 {
		t.add("inbound.max_exchanges", "invalid-value", "max_exchanges may not be negative")
	}
	if raw.Inbound.MaxMemory != "" {
		n, err := ParseSize(raw.Inbound.MaxMemory)
		switch {
		case err != nil:
			t.add("inbound.max_memory", "invalid-value", "%v", err)
		case n < MinMaxMemory:
			t.add("inbound.max_memory", "invalid-value", "max_memory is at least 1MiB, not %s", raw.Inbound.MaxMemory)
		default:
			p.Inbound.MaxMemory = n
		}
	}
	if len(raw.Inbound.Signals) > 0 {
		p.Inbound.Signals = map[string]SignalAction{}
		keys := make([]string, 0, len(raw.Inbound.Signals))
		for k := range raw.Inbound.Signals {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			f := "inbound.signals." + k
			id := k
			if !strings.HasPrefix(id, "inbound.") {
				id = "inbound." + id
			}
			if !slices.Contains(Signals(), id) {
				t.add(f, "unknown-signal", "unknown signal (signals: %s)", strings.Join(Signals(), ", "))
				continue
			}
			switch a := SignalAction(raw.Inbound.Signals[k]); a {
			case SignalBlock, SignalFlag, SignalOff:
				p.Inbound.Signals[id] = a
			default:
				t.add(f, "unknown-action", "signal action is block, flag or off, not %q", a)
			}
		}
	}

	// Redaction and audit.
	p.Redaction.Style = raw.Redaction.Style
	if p.Redaction.Style == "" {
		p.Redaction.Style = RedactPlaceholder
	} else if !slices.Contains(RedactionStyles(), p.Redaction.Style) {
		t.add("redaction.style", "unknown-redaction-style", "unknown redaction style %q (styles: %s)", p.Redaction.Style, strings.Join(RedactionStyles(), ", "))
	}
	p.Audit = Audit{Enabled: raw.Audit.Enabled, Path: raw.Audit.Path}
	if p.Audit.Enabled && p.Audit.Path == "" {
		t.add("audit.path", "required", "audit.enabled needs a path for the audit trail")
	}

	// Quarantine: the policy's section over the default, each
	// destination's over the policy's.
	if raw.Quarantine != nil {
		p.quarantine = t.quarantine("quarantine", raw.Quarantine, p.defaultQuarantine())
	}
	for i, r := range raw.Destinations {
		if r.Quarantine != nil && i < len(p.Destinations) {
			p.Destinations[i].Quarantine = t.quarantine(p.fields.destinations[i]+".quarantine", r.Quarantine, p.Quarantine(nil))
		}
	}
	if raw.Default != nil && raw.Default.Quarantine != nil {
		p.Default.Quarantine = t.quarantine("default.quarantine", raw.Default.Quarantine, p.Quarantine(nil))
	}
	t.checkQuarantines(p)

	// Compile the custom rules the way the scanner will, so pattern errors
	// surface now and name the rule and the file.
	if len(t.problems) == 0 && (len(p.Custom) > 0 || len(p.Detectors) > 0 || len(p.Allow) > 0) {
		if _, err := p.NewScanner(nil); err != nil {
			var re *classifiers.RuleError
			field, code := "custom", "bad-pattern"
			if errors.As(err, &re) {
				for i, c := range p.Custom {
					if c.ID == re.Rule {
						field = p.fields.custom[i]
						if c.Pattern != "" {
							field += ".pattern"
						}
					}
				}
				for i, sel := range p.Detectors {
					if sel == re.Rule {
						field, code = fmt.Sprintf("scan.detectors[%d]", i), "unknown-detector"
					}
				}
				if strings.HasPrefix(re.Rule, "allow[") {
					field, code = "scan."+re.Rule, "allow-finds-nothing"
				}
				t.add(field, code, "%s: %v", re.Rule, re.Err)
			} else {
				t.add(field, code, "%v", err)
			}
		}
	}
	return p, t.problems
}

func (t *translator) destination(f string, r rawDestination) *Destination {
	d := &Destination{
		Name: r.Name, BaseURL: r.BaseURL, Provider: strings.ToLower(r.Provider), Model: r.Model,
		MaxInputTokens: r.MaxInputTokens, Tokenizer: r.Tokenizer, Shared: r.Shared, Contract: r.Contract,
		IncidentContact: r.IncidentContact, Passthrough: r.Passthrough, Field: f,
	}
	for i, pat := range d.Passthrough {
		if !strings.HasPrefix(pat, "/") || strings.ContainsAny(pat, " \t?#") {
			t.add(fmt.Sprintf("%s.passthrough[%d]", f, i), "invalid-value",
				"passthrough holds URL path globs starting with / (\"*\" matches any run of characters), not %q", pat)
		}
	}
	if d.Tokenizer != "" && !slices.Contains(Tokenizers(), d.Tokenizer) {
		t.add(f+".tokenizer", "invalid-value", "tokenizer is one of %s, not %q (leave it out when the destination's tokenizer is unknown)",
			strings.Join(Tokenizers(), ", "), d.Tokenizer)
	}
	if d.Name == "" {
		t.add(f+".name", "required", "a destination needs a name")
	} else if strings.IndexFunc(d.Name, unicode.IsSpace) >= 0 {
		t.add(f+".name", "invalid-value", "a destination name may not contain spaces")
	}
	if d.BaseURL != "" {
		u, err := url.Parse(d.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.add(f+".base_url", "invalid-value", "base_url must be an absolute http or https URL")
		}
	}
	d.MaxLevel = t.level(f+".max_level", r.MaxLevel, true)
	switch Action(r.Action) {
	case "":
		d.Action = ActionBlock
	case ActionRedact, ActionBlock:
		d.Action = Action(r.Action)
	default:
		t.add(f+".action", "unknown-action", "the action above max_level is redact or block, not %q", r.Action)
	}
	d.BlockAt = t.level(f+".block_at", r.BlockAt, false)
	if d.BlockAt != "" && d.MaxLevel != "" && slices.Index(t.levels, d.BlockAt) <= slices.Index(t.levels, d.MaxLevel) {
		t.add(f+".block_at", "invalid-value", "block_at (%s) must be above max_level (%s)", d.BlockAt, d.MaxLevel)
	}
	if d.MaxInputTokens < 0 {
		t.add(f+".max_input_tokens", "invalid-value", "max_input_tokens may not be negative (0 means unlimited)")
	}
	return d
}
