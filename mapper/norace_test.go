//go:build !race

package mapper

// raceEnabled is true when the tests run with the race detector.
const raceEnabled = false
