package classifiers

// Category groups detectors by the kind of data they find.
type Category string

// The categories a finding can belong to.
const (
	CategoryPII    Category = "pii"
	CategorySecret Category = "secret"
	CategoryMarker Category = "marker"
	CategoryCustom Category = "custom"
)

// Finding is one sensitive value found in an input.
//
// A Finding never holds the raw value: it carries the byte span of the value
// in the scanned input (so a caller that owns the input can act on it, for
// example to redact it), a masked preview that is safe to print, and a keyed
// hash of the value's normalised form (so two findings of the same value can
// be compared without revealing it).
type Finding struct {
	// Detector is the stable detector ID, such as "pii.email" or
	// "secret.github_token". Custom rules use the ID their rule declares.
	Detector string `json:"detector"`
	// Category is the detector's category.
	Category Category `json:"category"`
	// Start and End are the byte offsets of the value in the input
	// (End exclusive). Both fall on UTF-8 rune boundaries.
	Start int `json:"start"`
	End   int `json:"end"`
	// Line and EndLine are 1-based line numbers of Start and End-1;
	// Column is the 1-based column of Start, counted in runes.
	Line    int `json:"line"`
	EndLine int `json:"end_line"`
	Column  int `json:"column"`
	// Confidence is in (0, 1]; context words and successful validation
	// raise it.
	Confidence float64 `json:"confidence"`
	// Preview is a masked rendering of the value that reveals at most a few
	// characters of it, never enough to reconstruct it.
	Preview string `json:"preview"`
	// Hash is the hex-encoded keyed hash (HMAC-SHA256, truncated) of the
	// value's normalised form: digits only for numbers such as cards and
	// phone numbers, lower case for e-mail addresses, and so on. Findings
	// from scanners sharing a key compare equal when their values do.
	Hash string `json:"hash"`
	// Encoding names the encoding the value was found under when it was
	// not written plainly: "base64", "hex" or "percent" (see
	// EncodingBase64…). Start and End then span every byte of the input
	// the value was encoded in: the whole base64 or hex run, the %XX
	// triples. Empty for values found as written, including those found
	// through Unicode normalisation (fullwidth forms, invisible
	// characters), whose span covers the characters they were written
	// with.
	Encoding string `json:"encoding,omitempty"`
}
