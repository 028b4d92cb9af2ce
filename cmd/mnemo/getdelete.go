package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

func cmdGet(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "get")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile the memory belongs to (required) (default $MNEMO_PROFILE)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mnemo get --profile P ID")
	}
	if err := mnemotype.CheckText("id", pos[0]); err != nil {
		return err
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	defer e.Close()
	m, err := e.Get(ctx, *profile, pos[0])
	if err != nil {
		return err
	}
	return writeJSON(a, m)
}

func cmdDelete(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "delete")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile the memory belongs to (required) (default $MNEMO_PROFILE)")
	session := fs.String("session", "", "delete every memory of this session")
	project := fs.String("project", "", "delete every memory of this project (with --session: of both)")
	var filters scopeFilters
	filters.register(fs)
	all := fs.Bool("all", false, "delete the whole profile: its memories, its settings, and its API keys (revoked)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo delete --profile P ID... | [--session S] [--project X] [--actor A]... [--after T] [--before T] [--meta KEY=VALUE]... | --all")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	bulk := *session != "" || *project != "" || filters.given()
	switch {
	case *all && (bulk || len(pos) > 0):
		return usagef("--all deletes the whole profile: give no ids or filters with it")
	case bulk && len(pos) > 0:
		return usagef("give ids, or filters (--session, --project, --actor, --after, --before, --meta), not both")
	case *all:
		e, err := ef.openExisting(a)
		if err != nil {
			return err
		}
		defer e.Close()
		d, err := e.DeleteProfile(ctx, *profile)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "deleted profile %s: %d memories, %d settings, %d API keys revoked\n", *profile, d.Memories, d.Settings, d.Keys)
		return nil
	case bulk:
		e, err := ef.openExisting(a)
		if err != nil {
			return err
		}
		defer e.Close()
		q := mnemo.ForgetQuery{Profile: *profile, Project: *project, Session: *session, Actors: filters.actors, Metadata: filters.meta}
		if q.After, q.Before, err = filters.times(); err != nil {
			return err
		}
		n, err := e.ForgetMatching(ctx, q)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "deleted %d memories\n", n)
		return nil
	case len(pos) == 0:
		return usagef("usage: mnemo delete --profile P ID... | [--session S] [--project X] [--actor A]... [--after T] [--before T] [--meta KEY=VALUE]... | --all")
	}
	for _, id := range pos {
		if err := mnemotype.CheckText("id", id); err != nil {
			return err
		}
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	defer e.Close()
	for _, id := range pos {
		if err := e.Forget(ctx, *profile, id); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, "deleted", id)
	}
	return nil
}

// readAllLimited reads r up to limit bytes; more is an error.
func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if int64(len(b)) >= limit {
		return nil, usagef("input is larger than %d bytes", limit-1)
	}
	return b, nil
}
