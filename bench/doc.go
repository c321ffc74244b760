// Package bench measures floodgate beside the alternatives a user would pick
// instead: overhead benchmarks (go test -bench) and a deterministic scenario
// suite run in virtual time (testing/synctest). It is its own module so that
// the comparison dependencies never enter the library's go.mod.
package bench
