package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// runPeakRSS runs cmd and returns its peak resident set size in bytes:
// the last high-water mark (VmHWM) read from /proc while it ran, polled
// every 2 ms. The rusage of a child does not do: the child of a Go process
// starts on its parent's memory (vfork), and Linux carries that high-water
// mark across exec, so a large parent would inflate every child's figure.
func runPeakRSS(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var max int64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := vmHWM(status); v > max {
				max = v
			}
			select {
			case <-done:
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	return <-peak, err
}

// vmHWM reads a /proc status file's VmHWM in bytes (0 when unreadable:
// the process is gone).
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len("VmHWM:"):])
	if len(f) < 2 || string(f[1]) != "kB" {
		return 0
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}
