package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// embedOutput is what `mnemo embed --json` prints.
type embedOutput struct {
	Model   string      `json:"model"`
	Dim     int         `json:"dim"`
	Vectors [][]float32 `json:"vectors"`
}

// cmdEmbed prints the embeddings of its arguments (or of stdin's lines).
func cmdEmbed(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "embed")
	embedder := fs.String("embedder", "", "embedder: "+strings.Join(embedderNames, ", ")+" (default $MNEMO_EMBEDDER, else "+defaultEmbedder+")")
	model := fs.String("model", "", "deprecated spelling of --embedder, kept for one release")
	asJSON := fs.Bool("json", false, `print {"model","dim","vectors":[[...]]} as JSON`)
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo embed [--embedder NAME] [--json] TEXT...\n       mnemo embed [--embedder NAME] [--json] < lines.txt\nEmbeds each argument (or each line of stdin when there is none).")
		fs.PrintDefaults()
	}
	texts, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *model != "" && *embedder != "" && *model != *embedder:
		return usagef("--model is the old spelling of --embedder: give one of them")
	case *model != "":
		fmt.Fprintln(a.stderr, "mnemo embed: --model is deprecated; use --embedder")
		embedder = model
	}
	if len(texts) == 0 {
		sc := bufio.NewScanner(a.stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			texts = append(texts, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(texts) == 0 {
			return usagef("no text to embed")
		}
	}
	e, err := a.openEmbedder(a.embedderName(*embedder))
	if err != nil {
		return err
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	w := bufio.NewWriter(a.stdout)
	if *asJSON {
		if err := json.NewEncoder(w).Encode(embedOutput{Model: e.Model(), Dim: e.Dim(), Vectors: vecs}); err != nil {
			return err
		}
		return w.Flush()
	}
	fmt.Fprintf(w, "# model %s, dim %d\n", e.Model(), e.Dim())
	var line []byte
	for _, v := range vecs {
		line = line[:0]
		for j, x := range v {
			if j > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendFloat(line, float64(x), 'g', -1, 32)
		}
		line = append(line, '\n')
		w.Write(line)
	}
	return w.Flush()
}
