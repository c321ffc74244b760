//go:build unix

package bench

import "syscall"

// processCPU returns the CPU time the process has used so far, user and
// system, in ns, and true; it counts every thread, the garbage collector's
// included, and none of the time the process waited for a CPU.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
