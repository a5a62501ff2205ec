package policies

import (
	_ "embed"
	"slices"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of policy files, for
// editors. The loader's checks are stricter (levels must be declared,
// patterns must compile); run [Lint] for those.
func Schema() []byte { return slices.Clone(schemaJSON) }
