//go:build !race

package bench

// raceEnabled: this test binary runs under the race detector (go test
// -race), ten times slower on the scenarios' simulations.
const raceEnabled = false
