package main

import (
	"errors"
	"flag"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// errHelp is returned when -h was asked for; it exits 0.
var errHelp = flag.ErrHelp

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(a *app, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mnemo "+name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	return fs
}

// parseInterleaved parses args allowing flags after positional arguments
// ("mnemo recall QUERY --trace"), as users type them. A lone "--" ends flag
// parsing. It returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func isInvalid(err error) bool { return errors.Is(err, mnemotype.ErrInvalid) }
