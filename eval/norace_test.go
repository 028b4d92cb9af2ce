//go:build !race

package eval

// raceEnabled reports a -race build: slow end-to-end gates skip under it.
const raceEnabled = false
