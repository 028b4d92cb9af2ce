package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/embed/glove"
)

func TestEmbed_JSON(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var got embedOutput
	if err := json.Unmarshal([]byte(c.ok("embed", "--embedder", "hash", "--json", "first text", "second text")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "hash" || got.Dim != 256 || len(got.Vectors) != 2 || len(got.Vectors[1]) != 256 {
		t.Fatalf("embed --json = model %q dim %d, %d vectors", got.Model, got.Dim, len(got.Vectors))
	}
	for i, v := range got.Vectors {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("vector %d: squared norm %v, want 1", i, s)
		}
	}
}

func TestEmbed_TextAndStdin(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	code, out, errs := c.run("one\ntwo\nthree\n", "embed", "--embedder", "hash")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "# model hash, dim 256" || len(strings.Fields(lines[3])) != 256 {
		t.Errorf("embed from stdin printed %d lines, header %q", len(lines), lines[0])
	}
	if code, _, _ := c.run("", "embed", "--embedder", "hash"); code != 2 {
		t.Errorf("embed with no text: exit %d, want 2", code)
	}
}

func TestEmbed_Glove(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	installTinyModel(t, c)
	delete(c.env, "MNEMO_EMBEDDER") // the default embedder is glove
	var got embedOutput
	if err := json.Unmarshal([]byte(c.ok("embed", "--json", "the dog", "a puppy")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != glove.DefaultName || got.Dim != 8 || len(got.Vectors) != 2 {
		t.Errorf("embed --json = model %q dim %d, %d vectors", got.Model, got.Dim, len(got.Vectors))
	}
}

func TestEmbed_GloveMissing(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	code, _, errs := c.run("", "embed", "--embedder", "glove", "text")
	if code != 1 || !strings.Contains(errs, "mnemo models pull") {
		t.Errorf("embed without the model: exit %d: %s", code, errs)
	}
	if code, _, errs := c.run("", "embed", "--embedder", "nope", "text"); code != 2 {
		t.Errorf("embed --embedder nope: exit %d: %s", code, errs)
	}
}

// TestEmbed_ModelIsADeprecatedEmbedder: --model still works, with a
// deprecation note; given with a different --embedder it is refused.
func TestEmbed_ModelIsADeprecatedEmbedder(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	code, out, errs := c.run("", "embed", "--model", "hash", "--json", "text")
	if code != 0 || !strings.Contains(out, `"model"`) || !strings.Contains(errs, "deprecated; use --embedder") {
		t.Errorf("embed --model hash: exit %d, %s %s", code, out, errs)
	}
	if code, _, errs := c.run("", "embed", "--model", "hash", "--embedder", "glove", "text"); code != 2 {
		t.Errorf("--model and another --embedder: exit %d, %s", code, errs)
	}
}
