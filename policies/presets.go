package policies

import (
	"embed"
	"slices"
)

//go:embed presets/*.yaml
var presetFS embed.FS

// presetNames lists the presets in the order Presets returns them.
var presetNames = []string{"default", "strict", "pci", "gdpr", "secrets-only"}

// Presets returns the names of the embedded presets.
func Presets() []string { return slices.Clone(presetNames) }

// Preset loads the embedded preset called name. Each call returns a new
// Policy.
func Preset(name string) (*Policy, error) {
	data, err := PresetSource(name)
	if err != nil {
		return nil, err
	}
	return Parse(data, "yaml", "preset:"+name)
}

// PresetSource returns the YAML source of the preset called name, to start
// a policy file from.
func PresetSource(name string) ([]byte, error) {
	if !slices.Contains(presetNames, name) {
		return nil, &UnknownPresetError{Name: name}
	}
	return presetFS.ReadFile("presets/" + name + ".yaml")
}
