package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
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

// metaFlag collects repeatable --meta KEY=VALUE metadata equality filters;
// VALUE reads as mnemotype.ParseMetadataValue does (2 a number, '"2"' a
// string, true, false, null, any other text as itself).
type metaFlag map[string]any

func (m *metaFlag) String() string { return fmt.Sprint(map[string]any(*m)) }

func (m *metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE, e.g. speaker=Caroline", s)
	}
	if *m == nil {
		*m = metaFlag{}
	}
	if _, dup := (*m)[k]; dup {
		return fmt.Errorf("key %q given twice: a member equals one value", k)
	}
	(*m)[k] = mnemotype.ParseMetadataValue(v)
	return nil
}

// scopeFilters are the filters list and export share with recall: actor,
// time range and metadata.
type scopeFilters struct {
	actors        listFlag
	after, before string
	meta          metaFlag
}

func (f *scopeFilters) register(fs *flag.FlagSet) {
	fs.Var(&f.actors, "actor", `only memories of this actor (repeatable, or comma-separated; "" for none)`)
	fs.StringVar(&f.after, "after", "", "only memories that occurred at or after this time (RFC 3339 or a date)")
	fs.StringVar(&f.before, "before", "", "only memories that occurred before this time (RFC 3339 or a date)")
	fs.Var(&f.meta, "meta", `only memories whose metadata has KEY equal to VALUE (repeatable; VALUE 2 is a number, '"2"' a string, null also matches an absent KEY)`)
}

// given reports whether any filter was given.
func (f *scopeFilters) given() bool {
	return len(f.actors) > 0 || f.after != "" || f.before != "" || len(f.meta) > 0
}

// times parses --after and --before (zero when not given).
func (f *scopeFilters) times() (after, before time.Time, err error) {
	for _, b := range []struct {
		flag, v string
		into    *time.Time
	}{{"--after", f.after, &after}, {"--before", f.before, &before}} {
		if b.v != "" {
			if *b.into, err = parseTime(b.flag, b.v); err != nil {
				return time.Time{}, time.Time{}, err
			}
		}
	}
	return after, before, nil
}

// apply sets the filters on q.
func (f *scopeFilters) apply(q *mnemo.ListQuery) error {
	var err error
	q.Actors, q.Metadata = f.actors, f.meta
	q.After, q.Before, err = f.times()
	return err
}

// flagGiven reports whether the command line set the flag name (a default,
// from the environment say, is not given).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
