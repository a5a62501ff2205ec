//go:build unix

package classifiers

import "syscall"

// processCPU returns the user and system CPU time the process has used, in
// nanoseconds. Benchmarks report it per operation (cpu-ns/op) next to the
// wall time, which on a machine shared with other work also counts the
// time spent waiting for a core.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
