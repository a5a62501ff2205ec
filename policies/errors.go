package policies

import (
	"fmt"
	"strings"
)

// FieldError is one problem in a policy file, naming the file and the field.
type FieldError struct {
	// File is the policy file ("preset:NAME" for presets, the name given
	// to Parse otherwise).
	File string
	// Field is the path of the field in the file, such as
	// "destinations[1].max_level"; empty for problems with the whole file.
	Field string
	// Code is the diagnostic code (see [Lint]), such as "undeclared-level".
	Code string
	// Message says what is wrong; it never quotes a custom rule's pattern
	// match or any scanned value.
	Message string
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Message)
}

// LoadError reports every problem found while loading one policy file.
// errors.As finds it in the error returned by [Load], [Parse] and [LoadRef];
// each of its Problems is a *FieldError.
type LoadError struct {
	File     string
	Problems []*FieldError
}

// Error implements error; it lists every problem, one per line.
func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so errors.As finds a *FieldError too.
func (e *LoadError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// UnknownPresetError is returned for a preset name that does not exist.
type UnknownPresetError struct{ Name string }

// Error implements error.
func (e *UnknownPresetError) Error() string {
	return fmt.Sprintf("unknown preset %q (presets: %s)", e.Name, strings.Join(Presets(), ", "))
}

// UnknownDestinationError is returned for a destination name the policy
// does not declare.
type UnknownDestinationError struct {
	Policy, Name string
	Known        []string
}

// Error implements error.
func (e *UnknownDestinationError) Error() string {
	return fmt.Sprintf("policy %s has no destination %q (destinations: %s)", e.Policy, e.Name, strings.Join(e.Known, ", "))
}
