//go:build !unix

package glove

import (
	"io"
	"os"
)

// mapFile reads the first size bytes of f; unmap is a no-op.
func mapFile(f *os.File, size int) (b []byte, unmap func(), err error) {
	b = make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
