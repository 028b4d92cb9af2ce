package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// defaultRecollect is how many memories recollect writes.
const defaultRecollect = 3

// hookInput is the JSON a coding assistant's prompt hook receives on
// stdin (Claude Code's UserPromptSubmit: session_id, cwd, prompt, …).
type hookInput struct {
	Prompt    string `json:"prompt"`
	SessionID string `json:"session_id"`
}

// cmdRecollect writes the memories that best match a prompt, as markdown,
// to a file replaced atomically: a hook run at every prompt,
// so it must be fast (process start, model load and query embedding
// included).
func cmdRecollect(ctx context.Context, a *app, args []string) (err error) {
	fs := newFlags(a, "recollect")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to recall from (required) (default $MNEMO_PROFILE)")
	project := fs.String("project", "", "restrict to a project")
	var sessions listFlag
	fs.Var(&sessions, "session", "restrict to a session (repeatable, or comma-separated)")
	out := fs.String("out", "", "file to write the markdown to, replaced atomically (required; - for stdout)")
	limit := fs.Int("limit", defaultRecollect, "number of memories to write")
	hook := fs.Bool("hook", false, "read the prompt from a hook's JSON on stdin ({\"prompt\": ...}, as Claude Code sends it)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo recollect --profile P [--session S] [--project X] [--limit 3] --out FILE (PROMPT | - | --hook)

Writes the top memories for PROMPT as markdown to FILE (temp file + rename,
so a reader never sees half a file; no match writes an empty file). PROMPT
"-" reads the prompt from stdin; --hook reads a prompt hook's JSON from stdin
(and makes every failure exit 1, never 2, which a hook would read as "block").`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *hook {
		// Claude Code reads exit code 2 from a UserPromptSubmit hook as
		// "block this prompt": a hook's failure must not stop the user, so
		// with --hook every error exits 1 (reported, prompt kept).
		defer func() {
			if err != nil {
				err = errors.New(err.Error())
			}
		}()
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out is required: the file to write the recollection to (- for stdout)")
	}
	if *limit < 1 || *limit > mnemo.MaxLimit {
		return usagef("--limit = %d: must be an integer in [1, %d]", *limit, mnemo.MaxLimit)
	}
	prompt := strings.Join(pos, " ")
	switch {
	case *hook:
		if len(pos) > 0 {
			return usagef("--hook reads the prompt from stdin: give no PROMPT argument")
		}
		b, err := readAllLimited(a.stdin, 4<<20)
		if err != nil {
			return err
		}
		var in hookInput
		if err := json.Unmarshal(b, &in); err != nil {
			return usagef("--hook: stdin is not a hook's JSON object: %v", err)
		}
		prompt = in.Prompt
	case prompt == "-":
		b, err := readAllLimited(a.stdin, 4<<20)
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	var res *mnemo.RecallResult
	if strings.TrimSpace(prompt) != "" {
		e, err := ef.openExisting(a)
		if err != nil {
			if !errors.Is(err, mnemotype.ErrNotFound) {
				return err
			}
			// Nothing stored yet: nothing to recall, and a hook must not
			// create a database where none was meant to be.
			fmt.Fprintf(a.stderr, "mnemo recollect: %v\n", err)
			return writeRecollection(a, *out, &mnemo.RecallResult{})
		}
		var rerr error
		// The pool recall reads only the two-stage candidate pool, not the
		// whole profile's embeddings: a one-shot process cannot amortise
		// loading them.
		res, rerr = e.RecallPool(ctx, mnemo.Query{Text: prompt, Profile: *profile, Project: *project, Sessions: sessions, Limit: *limit})
		if err := e.Close(); rerr == nil && err != nil {
			return err
		}
		if rerr != nil {
			return rerr
		}
	} else {
		// An empty prompt recalls nothing; the file is still replaced so a
		// stale recollection never lingers.
		res = &mnemo.RecallResult{}
	}
	return writeRecollection(a, *out, res)
}

// writeRecollection writes res's recollection to the file out, or stdout
// for "-".
func writeRecollection(a *app, out string, res *mnemo.RecallResult) error {
	md := recollectionMarkdown(res)
	if out == "-" {
		_, err := a.stdout.Write(md)
		return err
	}
	return replaceFile(out, md)
}

// recollectionMarkdown renders the recalled memories, best first; nothing
// at all when there are none.
func recollectionMarkdown(res *mnemo.RecallResult) []byte {
	if len(res.Results) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("## Recollection\n\nMemories from earlier work that may be relevant, most relevant first:\n\n")
	for _, r := range res.Results {
		meta := []string{r.CreatedAt.Format("2006-01-02")}
		if r.Kind != "" && r.Kind != "episodic" {
			meta = append(meta, string(r.Kind))
		}
		if r.Project != "" {
			meta = append(meta, "project "+r.Project)
		}
		if r.Session != "" {
			meta = append(meta, "session "+r.Session)
		}
		lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(r.Content, "\r\n", "\n")), "\n")
		fmt.Fprintf(&b, "%d. *(%s)* %s\n", r.Rank, strings.Join(meta, ", "), lines[0])
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("   " + l + "\n")
		}
	}
	return b.Bytes()
}

// replaceFile replaces path with data: a temporary file in the same
// directory, renamed over path, so a reader sees the old file or the new
// one, never a mix. (No fsync: the file is a cache rebuilt at every prompt,
// and the hook's latency matters more than surviving a power cut.)
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := io.Copy(f, bytes.NewReader(data))
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}
