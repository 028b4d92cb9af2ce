//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package dense

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// A snapshot writer holds an exclusive flock(2) on its temporary file until
// the file is renamed into place; the kernel releases it when the writer's
// process ends, however it ends. A temporary file nobody holds is a dead
// writer's (or one just created, not yet locked: its writer finds it gone
// and creates another, see createTemp).

// A file system that has no flock (some network ones) leaves the
// temporary files unlocked; they are then taken for a dead writer's once
// staleTemp old, as where there is no flock at all.

// lockTemp takes f's lock, without waiting: it fails when another
// process's cleanup holds it (about to remove f).
func lockTemp(f *os.File) error {
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return err
	}
	return nil
}

// removeIfStale removes the temporary file name unless a live writer
// holds it, and returns its size when it did.
func removeIfStale(name string) (removed bool, size int64) {
	f, err := os.Open(name)
	if err != nil {
		return false, 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, 0
	}
	switch err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, 0 // a live writer's
	case err != nil && time.Since(fi.ModTime()) < staleTemp:
		return false, 0 // no flock here: too young to tell
	}
	if !stillAt(fi, name) {
		return false, 0 // renamed into place meanwhile
	}
	return os.Remove(name) == nil, fi.Size()
}

// commitTemp renames f to path, then closes it: the lock is held until
// the file is in place.
func commitTemp(f *os.File, path string) error {
	err := os.Rename(f.Name(), path)
	return errors.Join(err, f.Close())
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if lerr = syscall.Flock(int(fd), how); lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return lerr
}
