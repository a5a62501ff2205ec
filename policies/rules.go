package policies

import (
	"path"
	"slices"

	"github.com/aishield/aishield/classifiers"
)

// DetectorIDs returns the IDs of the detectors a scanner of p runs
// ([Policy.NewScanner]): the built-ins its scan.detectors enables (every
// built-in when it lists none) and its custom rules, sorted.
func (p *Policy) DetectorIDs() []string {
	var ids []string
	for _, b := range classifiers.Builtins() {
		on := len(p.Detectors) == 0
		for _, sel := range p.Detectors {
			if ok, _ := path.Match(sel, b.ID); ok {
				on = true
				break
			}
		}
		if on {
			ids = append(ids, b.ID)
		}
	}
	for _, c := range p.Custom {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
