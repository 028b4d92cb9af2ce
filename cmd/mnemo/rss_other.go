//go:build !linux

package main

import "os/exec"

// runPeakRSS runs cmd; its peak RSS is not measured on this system (0).
func runPeakRSS(cmd *exec.Cmd) (int64, error) { return 0, cmd.Run() }
