// Package classifiers finds sensitive values in text: personal data,
// secrets, confidentiality markers, and an organisation's own terms and
// patterns. It is aishield's detection engine; package policies decides
// what a finding means for a request.
//
// # Detectors and findings
//
// A detector has a stable ID, such as "pii.email", "secret.github_token" or
// "marker.tlp", and a [Category]: [CategoryPII], [CategorySecret],
// [CategoryMarker], or [CategoryCustom] for custom rules. [Builtins] lists
// the built-in detectors and what each looks for; [Options].Detectors
// enables some of them by ID or path.Match glob ("pii.*").
//
// [New] compiles the enabled detectors and custom rules into a [Scanner],
// whose [Scanner.Scan], [Scanner.ScanString] and [Scanner.ScanReader]
// return the values they find as [Finding]s, sorted by Start. A Finding
// carries the detector ID and category, the value's byte span in the input
// (Start and End, on rune boundaries, with its line and column), a
// confidence in (0, 1], a masked Preview that shows at most a few
// characters of the value ("j***@e***.com", "ghp_****"; markers, which are
// labels rather than secrets, are shown whole), and Hash: a keyed hash
// (HMAC-SHA256 under [Options].HashKey, truncated to 16 bytes, in hex) of
// the value's normalised form, so that findings of the same value compare
// equal without revealing it, across scanners that share a key
// ([Scanner.KeyID] tells). A Finding never holds the value itself, and no
// error of this package quotes scanned text: a caller that owns the input
// acts on the value through its span (to redact it, for example), while
// reports, logs and audit records carry only findings.
//
// Where findings of built-in detectors overlap, the most specific is kept:
// a secret over personal data, then the longer span, then the higher
// confidence; of overlapping markers the first is kept. Findings of custom
// rules are all kept. [Options].Allow lists values that are never
// reported: each entry is scanned by New, and a later finding of the same
// detector with the same hash is dropped.
//
// # The prefilter and linear time
//
// Detectors do not each pass over the input. A scan makes two passes over
// it: one Aho-Corasick automaton, built by New, finds the keywords of
// every enabled detector and custom rule and their context words, one
// table step per byte (ASCII letters folded); then one walk, eight bytes at
// a time, stops at the anchor bytes: digits, which start the numeric
// candidates of card, IBAN, phone and other number detectors, '@' for
// e-mail addresses, ':' for IPv6, and capitals for person names. A
// detector then reads only a bounded window around each of its keywords or
// anchors; the built-in regular expressions (package regexp, which
// guarantees linear-time matching) run in those windows and nowhere else.
// The time of a scan is therefore linear in the length of the input, and
// text that holds none of a detector's keywords or anchors costs that
// detector nothing.
//
// Inputs longer than 1 MiB are scanned in chunks that overlap by more than
// the longest value a built-in detector reports plus the context it reads,
// so a value across a chunk boundary is found once; ScanReader holds about
// one chunk in memory.
//
// # Normalisation
//
// Detectors read each chunk in Unicode NFKC with invisible characters
// removed (fullwidth letters and digits, a zero-width space or a soft
// hyphen inside a value), and again with its percent, hex and base64 runs
// that decode to printable text decoded (two passes at most). A finding's
// span is mapped back to the bytes the value was written with: the whole
// encoded run, the invisible characters inside it. [Finding].Encoding
// names the decoding. See docs/detectors.md and normalise.go.
//
// # Validation and context
//
// Built-in detectors check what can be checked, and a candidate that fails
// is not reported: Luhn and issuer ranges for payment cards, Luhn for
// SIREN and SIRET, ISO 7064 mod 97 for IBANs (with each country's length)
// and the French NIR key, the SSA's area, group and serial rules for US
// Social Security numbers, the check digits or letters of UK NHS numbers,
// Dutch BSNs, Spanish DNIs and Italian fiscal codes, numbering-plan
// metadata (libphonenumber's) for phone numbers, public address ranges
// (net/netip) for IP addresses, Base58Check, Bech32 and EIP-55 for wallet
// addresses, GitHub's CRC32 token checksum, a decodable JSON header for
// JWTs, matching labels and a decodable body for PEM and OpenSSH private
// keys, and a Shannon entropy floor and stop words for secrets assigned to
// names such as password or api_key. Context words near a value (English
// and French, and German, Spanish, Italian and Dutch for some detectors)
// raise its confidence; numbers too ambiguous alone (SIREN, SIRET, NHS,
// BSN, and US SSNs written as nine bare digits) are only reported next to
// one. [Validators] lists the checks a custom rule can apply by name.
//
// # Reserved example values
//
// Values that documentation and tests publish are not findings unless
// [Options].IncludeReserved is set: RFC 2606 domains and the .example,
// .test, .invalid, .localhost and .local names, documented test card
// numbers and example IBANs, the documentation IP ranges (192.0.2.0/24,
// 2001:db8::/32, …), phone numbers reserved for fiction (NANP 555-01xx,
// ARCEP's and Ofcom's drama ranges), example SSNs, the names forms use for
// nobody (John Doe), and documented keys such as AWS's
// AKIAIOSFODNN7EXAMPLE or Stripe's test keys. Private, loopback and other
// non-public addresses are never findings, nor are placeholders where a
// secret would be ("changeme", "<your key>", "${TOKEN}", "xxxxxxxx").
//
// # Custom rules
//
// A [CustomRule] is an organisation's own detector: keywords matched as
// whole words (code names, customer names), a pattern in the syntax of
// github.com/dlclark/regexp2/v2 (.NET and Python style, with lookarounds and
// backreferences), or both, with an optional validator, context words and
// base confidence. New compiles every rule and returns a [*RuleError]
// naming the rule that cannot be compiled. Keywords share the automaton of
// the built-in detectors; a pattern given with keywords runs only within
// 256 bytes of them, a pattern without keywords runs over the whole input.
// regexp2 backtracks and is not linear, so every match runs under a
// timeout ([Options].MatchTimeout, [DefaultMatchTimeout] by default); a
// match that exceeds it ends that rule's scan of the chunk with a
// [*TimeoutError] naming the rule, and the scan returns what it found with
// that error.
//
// # Documents
//
// [Scanner.ScanDocument] scans a file, not only a string: plain text; the
// text of an Office Open XML document (DOCX, XLSX, PPTX), an OpenDocument
// file (ODT, ODS, ODP) or a PDF (its structure read with
// github.com/pdfcpu/pdfcpu, its content streams' text operators by this
// package); the members of a zip, tar or gzip archive, each a
// [Document] of its own named "archive!member", nested archives included;
// and the printable strings of a binary file, scanned for secrets only.
// Reading is bounded: archive depth, total uncompressed size, compression
// ratio (zip bombs), PDF pages, bytes and time. An Office document's
// Microsoft Information Protection sensitivity label, read from its
// metadata, is reported as a "marker.sensitivity_label" finding. Files
// that cannot be read (encrypted, corrupt, over a limit) come back
// skipped with a note naming the reason, never the content, and never as
// an error. [ExtractText] reads the same formats without scanning.
//
// # Concurrency
//
// A Scanner is safe for concurrent use by multiple goroutines: its
// configuration is never modified after New, each scan takes its working
// buffers from a pool (a sync.Pool) and gives them back cleared, and the
// phone validation tables a Scanner fills on first use are guarded by a
// lock. The Findings and Documents a scan returns belong to the caller and
// share nothing mutable with the Scanner. A scan checks its context before
// each chunk and each custom rule; once the context is done it stops and
// returns what it found with the context's error.
package classifiers
