package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed/cache"
)

const reembedUsage = `usage: mnemo reembed --profile P [--all] [--batch N] [--json] [--embedder NAME]

Embeds, with the current embedder, the profile's memories stored without an
embedding (added while the embedder was failing) and, with --all, those
embedded by another model (after changing --embedder). Progress is kept
batch by batch: an interrupted run resumes where it stopped. A profile never
mixes dimensions: a model of another dimension than the profile's embeddings
needs --all (recall skips the dense leg until the migration is complete).

`

func cmdReembed(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "reembed")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to re-embed (required) (default $MNEMO_PROFILE)")
	all := fs.Bool("all", false, "also re-embed memories embedded by another model")
	batch := fs.Int("batch", mnemo.DefaultReembedBatch, fmt.Sprintf("memories per embedder call, in [1, %d]", mnemo.MaxListLimit))
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	fs.Usage = func() {
		fmt.Fprint(a.stderr, reembedUsage)
		fs.PrintDefaults()
		fmt.Fprintln(a.stderr, "\n"+embedderHelp)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("reembed takes no arguments, got %q", strings.Join(pos, " "))
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if *batch < 1 || *batch > mnemo.MaxListLimit {
		return usagef("--batch = %d: must be in [1, %d]", *batch, mnemo.MaxListLimit)
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	bar := newReembedProgress(a.stderr)
	st, rerr := e.Reembed(ctx, mnemo.ReembedParams{Profile: *profile, All: *all, BatchSize: *batch, Progress: bar.update})
	bar.done()
	if err := e.Close(); rerr == nil && err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(a, reembedReport{Profile: *profile, ReembedStats: st}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.stdout, formatReembed(*profile, st, *all))
	}
	if errors.Is(rerr, mnemo.ErrDimensionMismatch) {
		// A configuration to fix; nothing was written.
		if _, ok := e.Embedder().(*cache.Cache); ok {
			path, _ := a.cachePath()
			rerr = fmt.Errorf("%w\nif the server's model changed, set MNEMO_EMBEDDER_DIM to the profile's dimension, "+
				"or delete the embedding cache %s (it may hold vectors of the other model)", rerr, path)
		}
		return usageError{rerr}
	}
	return rerr
}

// reembedReport is the JSON output of mnemo reembed.
type reembedReport struct {
	Profile string `json:"profile"`
	mnemo.ReembedStats
}

// formatReembed describes a run in one line.
func formatReembed(profile string, st mnemo.ReembedStats, all bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s, model %s: embedded %d of %d memories; %d already current", profile, st.Model,
		st.Embedded, st.Scanned, st.Current)
	if st.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", st.Failed)
	}
	if st.Changed > 0 {
		fmt.Fprintf(&b, ", %d changed meanwhile (left to their writer)", st.Changed)
	}
	if n := st.OtherCount(); n > 0 {
		models := make([]string, 0, len(st.Other))
		for m, c := range st.Other {
			models = append(models, fmt.Sprintf("%s: %d", m, c))
		}
		slices.Sort(models)
		fmt.Fprintf(&b, ", %d of other models (%s)", n, strings.Join(models, ", "))
		if !all {
			b.WriteString("; --all re-embeds them")
		}
	}
	return b.String()
}

// reembedProgress draws a progress line on a terminal.
type reembedProgress struct {
	w     io.Writer
	tty   bool
	start time.Time
	last  time.Time
	drawn bool
}

func newReembedProgress(w io.Writer) *reembedProgress {
	p := &reembedProgress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *reembedProgress) update(st mnemo.ReembedStats) {
	if !p.tty || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	rate := float64(st.Embedded) / max(time.Since(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r\033[Kreembed: %d scanned, %d embedded, %d failed  %.0f/s", st.Scanned, st.Embedded, st.Failed, rate)
	p.drawn = true
}

func (p *reembedProgress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
