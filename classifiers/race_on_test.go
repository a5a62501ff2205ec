//go:build race

package classifiers

// raceScale divides the rounds of the slowest randomised differential
// tests when the race detector is on: it makes them about ten times
// slower and has nothing to find in code that runs on one goroutine.
const raceScale = 4
