package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/eval"
)

// DefaultEvalTimeout bounds one POST /v1/eval.
const DefaultEvalTimeout = 10 * time.Minute

// evalRequest is POST /v1/eval: `mnemo eval` on one folder of
// Config.EvalDatasets, with the flags a page needs.
type evalRequest struct {
	Dataset         string   `json:"dataset"`
	Config          []string `json:"config,omitempty"`
	Baseline        string   `json:"baseline,omitempty"`
	K               []int    `json:"k,omitempty"`
	LimitQueries    int      `json:"limit_queries,omitempty"`
	ExcludeCategory []string `json:"exclude_category,omitempty"`
	Resamples       int      `json:"resamples,omitempty"`
	Seed            uint64   `json:"seed,omitempty"`
}

// maxEvalResamples bounds a request's resamples (the CLI's default is
// eval.DefaultResamples).
const maxEvalResamples = 10_000

// errNoEval answers the evaluation routes of a server started without a
// datasets folder.
var errNoEval = &apiError{status: http.StatusForbidden, code: "forbidden",
	msg: "this server runs no evaluations: start it with mnemo serve --eval-datasets DIR (a folder of dataset folders)"}

// evalDatasets lists the dataset folders of Config.EvalDatasets: those
// holding a queries.jsonl.
func (s *Server) evalDatasets(w http.ResponseWriter, r *http.Request, _ string) error {
	if s.cfg.EvalDatasets == "" {
		return errNoEval
	}
	ents, err := os.ReadDir(s.cfg.EvalDatasets)
	if err != nil {
		return fmt.Errorf("read the datasets folder: %w", err)
	}
	out := []string{}
	for _, e := range ents {
		if !validDatasetName(e.Name()) {
			continue
		}
		if st, err := os.Stat(filepath.Join(s.cfg.EvalDatasets, e.Name(), "queries.jsonl")); err == nil && st.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	writeJSON(w, http.StatusOK, map[string][]string{"datasets": out})
	return nil
}

// validDatasetName reports whether name can only name a folder directly
// inside the datasets folder.
func validDatasetName(name string) bool {
	return name != "" && !strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".") && filepath.IsLocal(name)
}

// runEval runs an evaluation on a dataset folder, one at a time, and
// answers its report (the JSON of `mnemo eval --json`).
func (s *Server) runEval(w http.ResponseWriter, r *http.Request, _ string) error {
	if s.cfg.EvalDatasets == "" {
		return errNoEval
	}
	var req evalRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if !validDatasetName(req.Dataset) {
		return badRequest("dataset %q: must name a folder of the server's datasets folder (GET /v1/eval/datasets lists them)", req.Dataset)
	}
	dir := filepath.Join(s.cfg.EvalDatasets, req.Dataset)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("dataset %q: no such folder in the datasets folder", req.Dataset)}
	}
	opts := eval.Options{Baseline: req.Baseline, LimitQueries: req.LimitQueries, Seed: req.Seed, Resamples: req.Resamples,
		ExcludeCategories: req.ExcludeCategory, Ks: req.K}
	if opts.Baseline == "" {
		opts.Baseline = eval.DefaultBaseline
	}
	if req.LimitQueries < 0 {
		return badRequest("limit_queries = %d: must be ≥ 0 (0: every judged query)", req.LimitQueries)
	}
	if req.Resamples < 0 || req.Resamples > maxEvalResamples {
		return badRequest("resamples = %d: must be an integer in [1, %d] (0: the default, %d)", req.Resamples, maxEvalResamples, eval.DefaultResamples)
	}
	for i, k := range req.K {
		if k < 1 || k > eval.DefaultLimit {
			return badRequest("k[%d] = %d: must be an integer in [1, %d]", i, k, eval.DefaultLimit)
		}
	}
	for i, c := range req.Config {
		cs, err := eval.ParseConfig(c)
		if err != nil {
			return badRequest("config[%d] = %q: %s", i, c, strings.TrimPrefix(err.Error(), mnemo.ErrInvalid.Error()+": "))
		}
		opts.Configs = append(opts.Configs, cs...)
	}
	if opts.Embedder = s.e.Embedder(); opts.Embedder == nil {
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "the server has no embedder to evaluate with (see mnemo models pull)"}
	}
	if !s.evalBusy.CompareAndSwap(false, true) {
		return &apiError{status: http.StatusConflict, code: "conflict", msg: "an evaluation is running: the server runs one at a time, try again when it ends"}
	}
	defer s.evalBusy.Store(false)
	ds, err := eval.Load(dir, eval.LoadOptions{})
	if err != nil {
		return badRequest("dataset %q: %s", req.Dataset, strings.ReplaceAll(err.Error(), dir, req.Dataset))
	}
	rep, err := eval.Run(r.Context(), ds, opts)
	if errors.Is(err, mnemo.ErrInvalid) {
		return badRequest("%s", strings.TrimPrefix(err.Error(), mnemo.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
