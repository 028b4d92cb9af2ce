//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package dense

import (
	"os"
	"time"
)

// Without flock(2), a temporary file is taken for a dead writer's once it
// is staleTemp old: a live writer's is younger (it is written in
// seconds).

func lockTemp(*os.File) error { return nil }

// removeIfStale removes the temporary file name once it is staleTemp old,
// and returns its size when it did.
func removeIfStale(name string) (removed bool, size int64) {
	fi, err := os.Stat(name)
	if err != nil || time.Since(fi.ModTime()) < staleTemp {
		return false, 0
	}
	return os.Remove(name) == nil, fi.Size()
}

// commitTemp closes f, then renames it to path (an open file cannot be
// renamed everywhere).
func commitTemp(f *os.File, path string) error {
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
