//go:build unix

package glove

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only. The mapping outlives f;
// unmap releases it.
func mapFile(f *os.File, size int) (b []byte, unmap func(), err error) {
	b, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { syscall.Munmap(b) }, nil
}
