package main

import (
	"context"
	"fmt"
	"strings"
)

const indexUsage = `usage: mnemo index verify|rebuild (--profile P | --all) [--json]

Recall keeps each profile's dense index in memory and a snapshot of it beside
the database (<database>.index), so that a new process reads one file and
catches up from the database instead of reading every memory. The snapshot
is a cache: deleting it loses nothing.

  verify   restores each index as a new process would and compares it with
           one built from the database alone; exits 1 if any differs
  rebuild  builds each index from the database, with the HNSW graph of a
           profile of 20,000 embedded memories or more, and writes its
           snapshot (mnemo serve and mcp grow graphs in the background and
           walk them; one-shot commands such as recall read the snapshot
           without its graph and scan)

A snapshot is never trusted over the database: a corrupt one, one another
database wrote, one a copy of this database wrote (cp of the file, a backup
restored, each written apart since), or one ahead of the database is
refused (and logged), and the index built from the database. verify reports
a refused snapshot (exit 1); rebuild writes a new one.

`

// indexReport is one profile's line of mnemo index --json.
type indexReport struct {
	Profile     string   `json:"profile"`
	Memories    int      `json:"memories"`
	Snapshot    string   `json:"snapshot,omitempty"`
	SnapshotSeq *int64   `json:"snapshot_seq,omitempty"`     // verify: the watermark of the snapshot used
	Refused     string   `json:"snapshot_refused,omitempty"` // verify: why the snapshot there was refused
	Differences []string `json:"differences,omitempty"`
	OK          bool     `json:"ok"`
	// Linked is how many memories the rebuilt index's graph holds (0 for
	// a profile too small for one).
	Linked int `json:"graph_linked,omitempty"`
}

func cmdIndex(ctx context.Context, a *app, args []string) error {
	verb := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	fs := newFlags(a, "index")
	ef := engineFlags{keepGraphs: true}
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile whose index to verify or rebuild (default $MNEMO_PROFILE)")
	all := fs.Bool("all", false, "every profile")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(a.stderr, indexUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch verb {
	case "verify", "rebuild":
	case "":
		return usagef("mnemo index needs verify or rebuild")
	default:
		return usagef("unknown index command %q: verify or rebuild", verb)
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *all == (*profile != "") {
		return usagef("give --profile P or --all")
	}
	if !*all {
		if err := checkProfileFlag(*profile); err != nil {
			return err
		}
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	defer e.Close()
	profiles := []string{*profile}
	if *all {
		pcs, err := e.Profiles(ctx)
		if err != nil {
			return err
		}
		profiles = profiles[:0]
		for _, p := range pcs {
			profiles = append(profiles, p.Profile)
		}
	}
	var reports []indexReport
	bad := 0
	for _, p := range profiles {
		r := indexReport{Profile: p, OK: true}
		if verb == "verify" {
			v, err := e.VerifyIndex(ctx, p)
			if err != nil {
				return err
			}
			r.Memories, r.Snapshot, r.Refused, r.Differences = v.Memories, v.Snapshot, v.Refused, v.Differences
			r.OK = len(v.Differences) == 0 && v.Refused == ""
			if v.SnapshotSeq >= 0 {
				r.SnapshotSeq = &v.SnapshotSeq
			}
		} else {
			st, err := e.RebuildIndex(ctx, p)
			if err != nil {
				return err
			}
			r.Memories, r.Linked = st.Memories, st.Linked
		}
		if !r.OK {
			bad++
		}
		reports = append(reports, r)
		if !*asJSON {
			printIndexReport(a, verb, r)
		}
	}
	if err := e.Close(); err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(a, reports); err != nil {
			return err
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d profiles' dense indexes differ from the database or have a refused snapshot: mnemo index rebuild repairs them",
			bad, len(profiles))
	}
	return nil
}

func printIndexReport(a *app, verb string, r indexReport) {
	switch {
	case verb == "rebuild":
		graph := ""
		if r.Linked > 0 {
			graph = fmt.Sprintf(", %d in its graph", r.Linked)
		}
		fmt.Fprintf(a.stdout, "%s: rebuilt from the database, %d memories%s\n", r.Profile, r.Memories, graph)
	case r.OK && r.SnapshotSeq == nil:
		fmt.Fprintf(a.stdout, "%s: ok, %d memories (no usable snapshot: a new process reads them from the database)\n", r.Profile, r.Memories)
	case r.OK:
		fmt.Fprintf(a.stdout, "%s: ok, %d memories (snapshot at change %d, caught up)\n", r.Profile, r.Memories, *r.SnapshotSeq)
	case len(r.Differences) == 0:
		fmt.Fprintf(a.stdout, "%s: snapshot REFUSED, %d memories read from the database instead: %s\n  %s\n", r.Profile, r.Memories, r.Snapshot, r.Refused)
	default:
		fmt.Fprintf(a.stdout, "%s: DIFFERS from the database:\n  %s\n", r.Profile, strings.Join(r.Differences, "\n  "))
	}
}
