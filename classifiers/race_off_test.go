//go:build !race

package classifiers

// raceScale: see race_on_test.go.
const raceScale = 1
