//go:build race

package mapper

// raceEnabled is true when the tests run with the race detector, which
// makes the large simulations ten times slower without finding anything
// in a single-goroutine core: TestScale then maps fewer hosts.
const raceEnabled = true
