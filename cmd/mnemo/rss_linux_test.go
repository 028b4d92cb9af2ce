package main

import (
	"os/exec"
	"runtime"
	"testing"
)

// TestRunPeakRSS: a child's peak is its own, not its parent's: this test
// holds 300 MB while a shell that holds about 60 MB and one that holds
// little run.
func TestRunPeakRSS(t *testing.T) {
	ballast := make([]byte, 300<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	small, err := runPeakRSS(exec.Command("sh", "-c", "sleep 0.1"))
	if err != nil {
		t.Fatal(err)
	}
	large, err := runPeakRSS(exec.Command("sh", "-c", `x=$(head -c 60000000 /dev/zero | tr '\0' a); sleep 0.1; echo ${#x} >/dev/null`))
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ballast)
	if small <= 0 || small > 50<<20 {
		t.Errorf("a sleeping shell's peak RSS = %d MB, want a few (the parent holds 300)", small>>20)
	}
	if large < 60<<20 || large > 250<<20 {
		t.Errorf("a shell holding 60 MB: peak RSS %d MB", large>>20)
	}
	if _, err := runPeakRSS(exec.Command("false")); err == nil {
		t.Error("a failing command's error was lost")
	}
}
