//go:build linux || darwin

package main

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSS is a finished process's peak resident set size in bytes (0 when
// unknown).
func peakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes there, kilobytes on Linux
	}
	return ru.Maxrss * 1024
}
