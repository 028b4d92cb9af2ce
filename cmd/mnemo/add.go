package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
)

// optFloat is a float flag that records whether it was set.
type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string { return fmt.Sprint(o.v) }
func (o *optFloat) Set(s string) error {
	f, err := parseFloat(s)
	if err != nil {
		return err
	}
	o.v, o.set = f, true
	return nil
}

// parseFloat parses a number, accepting NaN and Inf so that validation can
// name the field and its range instead of the parser failing vaguely.
func parseFloat(s string) (float64, error) {
	var f float64
	if _, err := fmt.Sscan(strings.TrimSpace(s), &f); err != nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "nan":
			return math.NaN(), nil
		case "inf", "+inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("not a number")
	}
	return f, nil
}

func cmdAdd(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "add")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile (tenant) the memory belongs to (required) (default $MNEMO_PROFILE)")
	project := fs.String("project", "", "project")
	session := fs.String("session", "", "session")
	kind := fs.String("kind", "episodic", "kind: episodic, semantic or identity")
	actor := fs.String("actor", "", "who said or did it: a speaker's name, user or assistant")
	occurred := fs.String("occurred-at", "", "when it happened: RFC 3339, a date or Unix seconds (default: the creation time)")
	seq := fs.Int64("seq", 0, "its place in the session (default: after the session's last memory)")
	var importance optFloat
	fs.Var(&importance, "importance", "importance in [0, 1] (default 0.5)")
	id := fs.String("id", "", "memory id (default: a new UUIDv7); adding the same memory under its id again changes nothing, another one under it is refused")
	at := fs.String("at", "", "creation time, RFC 3339 (default: now)")
	metadata := fs.String("metadata", "", "metadata, a JSON object")
	asJSON := fs.Bool("json", false, "print {\"id\": ...} as JSON (with \"replayed\": true for a memory already stored, \"embedding_deferred\": true for one stored without an embedding)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo add --profile P [--project X] [--session S] [--kind K] [--actor A] [--occurred-at T] [--seq N] [--importance F] [--id ID] [--at RFC3339] [--json] TEXT")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	text := strings.Join(pos, " ")
	if text == "-" {
		b, err := readAllLimited(a.stdin, mnemo.MaxContentBytes+1)
		if err != nil {
			return err
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return usagef("content is empty: pass the memory's text as the argument (or - to read stdin)")
	}
	in := mnemo.Input{ID: *id, Content: text, Kind: *kind, Profile: *profile, Project: *project, Session: *session,
		Actor: *actor, Seq: *seq}
	if *occurred != "" {
		if in.OccurredAt, err = parseTime("--occurred-at", *occurred); err != nil {
			return err
		}
	}
	if importance.set {
		in.Importance = &importance.v
	}
	if *at != "" {
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return usagef("--at %q: must be an RFC 3339 time such as 2026-11-23T10:00:00Z", *at)
		}
		in.CreatedAt = t
	}
	if *metadata != "" {
		in.Metadata = []byte(*metadata)
	}
	e, err := ef.open(a)
	if err != nil {
		return err
	}
	res, rerr := e.Write(ctx, []mnemo.Input{in})
	if err := e.Close(); rerr == nil && err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	out := added{ID: res.Memories[0].ID, Replayed: res.AllReplayed(), EmbeddingDeferred: res.Deferred > 0}
	if out.Replayed {
		fmt.Fprintf(a.stderr, "mnemo add: memory %s was already stored with this content; nothing changed\n", out.ID)
	}
	if *asJSON {
		return writeJSON(a, out)
	}
	_, err = fmt.Fprintln(a.stdout, out.ID)
	return err
}

// added is add's --json output.
type added struct {
	ID string `json:"id"`
	// Replayed: --id named a memory already stored with this content.
	Replayed bool `json:"replayed,omitempty"`
	// EmbeddingDeferred: stored without an embedding (mnemo reembed or
	// serve embeds it later).
	EmbeddingDeferred bool `json:"embedding_deferred,omitempty"`
}
