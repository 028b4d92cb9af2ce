package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// cmdList prints one page of a profile's memories, oldest first.
func cmdList(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "list")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to list (required) (default $MNEMO_PROFILE)")
	project := fs.String("project", "", "only this project's memories")
	session := fs.String("session", "", "only this session's memories")
	var filters scopeFilters
	filters.register(fs)
	limit := fs.Int("limit", mnemo.DefaultListLimit, fmt.Sprintf("memories per page, in [1, %d]", mnemo.MaxListLimit))
	cursor := fs.String("cursor", "", "the next_cursor a previous page printed")
	asJSON := fs.Bool("json", false, `print {"memories": [...], "next_cursor": "..."} as JSON`)
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo list --profile P [--project X] [--session S] [--actor A]... [--after T] [--before T] [--meta KEY=VALUE]... [--limit N] [--cursor C] [--json]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("mnemo list takes no arguments, got %q", pos)
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if *limit < 1 || *limit > mnemo.MaxListLimit {
		return usagef("--limit %d: must be in [1, %d]", *limit, mnemo.MaxListLimit)
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	defer e.Close()
	lq := mnemo.ListQuery{Profile: *profile, Project: *project, Session: *session, Limit: *limit, Cursor: *cursor}
	if err := filters.apply(&lq); err != nil {
		return err
	}
	page, err := e.List(ctx, lq)
	if err != nil {
		return err
	}
	if *asJSON {
		if page.Memories == nil {
			page.Memories = []mnemo.Memory{}
		}
		return writeJSON(a, struct {
			Memories   []mnemo.Memory `json:"memories"`
			NextCursor string         `json:"next_cursor,omitempty"`
		}{page.Memories, page.NextCursor})
	}
	w := bufio.NewWriter(a.stdout)
	for _, m := range page.Memories {
		where := m.Session
		if m.Actor != "" {
			where = strings.TrimPrefix(where+" ", " ") + m.Actor + ":"
		}
		fmt.Fprintf(w, "%s  %s  %s %s\n", m.ID, m.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), where, preview(m.Content, 100))
	}
	if page.NextCursor != "" {
		fmt.Fprintf(w, "next page: --cursor %s\n", page.NextCursor)
	}
	return w.Flush()
}

// preview is text on one line, cut to at most n runes.
func preview(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)
	return string(r[:n-1]) + "…"
}

// exportPage is the number of memories export reads at a time.
const exportPage = 1000

// cmdExport writes every memory of a profile as JSON lines that mnemo
// import reads back as they were.
func cmdExport(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "export")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to export (required) (default $MNEMO_PROFILE)")
	project := fs.String("project", "", "only this project's memories")
	session := fs.String("session", "", "only this session's memories")
	var filters scopeFilters
	filters.register(fs)
	embeddings := fs.Bool("embeddings", false, "include each memory's embedding (import then stores it instead of embedding the text again)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo export --profile P [--project X] [--session S] [--actor A]... [--after T] [--before T] [--meta KEY=VALUE]... [--embeddings] > memories.jsonl")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("mnemo export takes no arguments, got %q (it writes to stdout)", pos)
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	defer e.Close()
	w := bufio.NewWriter(a.stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for cursor := ""; ; {
		lq := mnemo.ListQuery{Profile: *profile, Project: *project, Session: *session, Limit: exportPage,
			Cursor: cursor, WithEmbeddings: *embeddings}
		if err := filters.apply(&lq); err != nil {
			return err
		}
		page, err := e.List(ctx, lq)
		if err != nil {
			return err
		}
		for _, m := range page.Memories {
			if err := enc.Encode(exportLine{Memory: m, Embedding: m.Embedding}); err != nil {
				return fmt.Errorf("write memory %s: %w", m.ID, err)
			}
			n++
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	fmt.Fprintf(a.stderr, "exported %d memories\n", n)
	return nil
}

// exportLine is a memory as mnemo export writes it: its JSON with its
// embedding, when asked for.
type exportLine struct {
	mnemotype.Memory
	Embedding []float32 `json:"embedding,omitempty"`
}

// cmdUpdate changes some fields of one memory.
func cmdUpdate(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "update")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile the memory belongs to (required) (default $MNEMO_PROFILE)")
	var p mnemo.Patch
	var importance optFloat
	fs.Var(&importance, "importance", "importance in [0, 1]")
	fs.Func("content", "new content (- reads stdin)", func(s string) error { p.Content = &s; return nil })
	fs.Func("kind", "episodic, semantic or identity", func(s string) error { p.Kind = &s; return nil })
	fs.Func("project", "project (\"\" for none)", func(s string) error { p.Project = &s; return nil })
	fs.Func("session", "session (\"\" for none); without --seq the memory becomes its last turn", func(s string) error { p.Session = &s; return nil })
	fs.Func("actor", "who said or did it (\"\" for nobody)", func(s string) error { p.Actor = &s; return nil })
	var seq optInt
	fs.Var(&seq, "seq", "its place in the session (0: the last)")
	occurred := fs.String("occurred-at", "", "when it happened: RFC 3339, a date or Unix seconds")
	fs.Func("metadata", "metadata, a JSON object, replacing the old (\"\" or null clears it)", func(s string) error {
		raw := json.RawMessage(s)
		p.Metadata = &raw
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo update --profile P ID [--content T] [--kind K] [--project X] [--session S] [--actor A] [--seq N] [--occurred-at T] [--importance F] [--metadata JSON]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mnemo update --profile P ID [flags]: one id, got %d arguments", len(pos))
	}
	if err := mnemotype.CheckID("id", pos[0]); err != nil {
		return usagef("%v", err)
	}
	if importance.set {
		p.Importance = &importance.v
	}
	if seq.set {
		p.Seq = &seq.v
	}
	if *occurred != "" {
		t, err := parseTime("--occurred-at", *occurred)
		if err != nil {
			return err
		}
		p.OccurredAt = &t
	}
	if p.Content != nil && *p.Content == "-" {
		b, err := readAllLimited(a.stdin, mnemo.MaxContentBytes+1)
		if err != nil {
			return err
		}
		s := string(b)
		p.Content = &s
	}
	if p == (mnemo.Patch{}) {
		return usagef("nothing to change: give at least one of --content, --kind, --project, --session, --actor, --seq, --occurred-at, --importance, --metadata")
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	m, uerr := e.Update(ctx, *profile, pos[0], p)
	if err := e.Close(); uerr == nil && err != nil {
		return err
	}
	if uerr != nil {
		return uerr
	}
	return writeJSON(a, m)
}

// optInt is an integer flag that records whether it was set.
type optInt struct {
	v   int64
	set bool
}

func (o *optInt) String() string { return fmt.Sprint(o.v) }
func (o *optInt) Set(s string) error {
	if _, err := fmt.Sscan(strings.TrimSpace(s), &o.v); err != nil {
		return fmt.Errorf("not a whole number")
	}
	o.set = true
	return nil
}

// cmdVersion prints mnemo's version.
func cmdVersion(_ context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("mnemo version takes no arguments")
	}
	_, err := fmt.Fprintf(a.stdout, "mnemo %s (%s, %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// version is this build's version: set at link time (-ldflags "-X
// main.buildVersion=v1.2.3"), else the module version go install
// recorded, else the commit it was built from.
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	return "dev+" + rev[:min(12, len(rev))] + dirty
}

// buildVersion is set at link time: -ldflags "-X main.buildVersion=v1.2.3".
var buildVersion string
