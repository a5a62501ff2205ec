// Package policies describes what an organisation may send to which AI
// destination, and decides, finding by finding, whether a request is allowed,
// redacted or blocked.
//
// A policy file (YAML; JSON and TOML load too) declares:
//
//   - an ordered list of sensitivity levels, lowest first
//     (for example public, internal, confidential, restricted);
//   - a mapping from detector IDs or globs ("secret.*", "pii.email") to
//     levels, where the most specific matching rule wins;
//   - custom classifiers (keywords, regexp2 patterns, validators, context
//     words), each with its level;
//   - destinations, matched by base URL prefix, provider and model glob, each
//     with the highest level it may receive, the action above it (redact or
//     block), its real input capacity in tokens, whether its infrastructure
//     is shared and whether a contract covers it;
//   - a default destination for anything unmatched, inbound verification
//     settings, the redaction style, the failure mode and audit settings.
//
// Loading goes through viper at this package's edge only: the file is read
// into raw structs, then translated into the checked types of this package.
// Every error names the file and the field (see [FieldError]). [Lint] adds
// checks that a syntactically valid policy can still fail, each with a rule
// code. [Policy.Decide] is deterministic: the same findings give the same
// decision with the same reasons in the same order, and no reason ever holds a
// raw value. [Evaluator] is the one evaluation of a request every door
// shares: capacity first, then classification and the decision.
//
// Presets ("default", "strict", "pci", "gdpr", "secrets-only") are embedded in
// the binary. Package policytest runs YAML policy test cases the way `opa
// test` does; package sarif writes scan findings for code scanning.
package policies
