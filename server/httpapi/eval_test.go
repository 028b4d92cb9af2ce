package httpapi_test

import (
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// TestServe_Eval: POST /v1/eval runs mnemo eval on a folder of
// --eval-datasets for an admin key (or single-user mode) and answers the
// report of `mnemo eval --json`, intervals included; other keys, a server
// without the folder and bad requests are refused naming what is wrong.
func TestServe_Eval(t *testing.T) {
	b := setup(t, opts{cfg: func(c *httpapi.Config) { c.EvalDatasets = "../../eval/testdata" }})
	admin, _, err := b.e.CreateAdminKey(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Datasets []string }
	b.must(200, "GET", "/v1/eval/datasets", admin, nil, &list)
	if strings.Join(list.Datasets, ",") != "tiny" {
		t.Errorf("datasets = %v, want [tiny] (golden has no queries.jsonl)", list.Datasets)
	}
	var rep struct {
		Dataset string
		Queries int
		Configs []struct {
			Name         string
			Overall      map[string]float64
			CI           map[string][2]float64            `json:"ci"`
			CIByCategory map[string]map[string][2]float64 `json:"ci_by_category"`
		}
		Comparisons []struct {
			Config, Baseline, Metric string
			Delta, CILow, CIHigh     float64
		}
	}
	b.must(200, "POST", "/v1/eval", admin, map[string]any{"dataset": "tiny", "config": []string{"default", "lexical"}, "resamples": 200}, &rep)
	if rep.Dataset != "tiny" || rep.Queries == 0 || len(rep.Configs) != 2 || len(rep.Comparisons) == 0 {
		t.Fatalf("report: dataset %q, %d queries, %d configs, %d comparisons", rep.Dataset, rep.Queries, len(rep.Configs), len(rep.Comparisons))
	}
	for _, c := range rep.Configs {
		r10, iv := c.Overall["recall@10"], c.CI["recall@10"]
		if iv[0] > r10 || r10 > iv[1] {
			t.Errorf("%s: recall@10 %v outside its interval %v", c.Name, r10, iv)
		}
		if len(c.CIByCategory["single-hop"]) == 0 {
			t.Errorf("%s: no interval for the single-hop category: %v", c.Name, c.CIByCategory)
		}
	}
	for _, c := range []struct {
		key    string
		body   any
		status int
		want   string
	}{
		{b.alice, map[string]any{"dataset": "tiny"}, 403, "admin key"},
		{"", map[string]any{"dataset": "tiny"}, 401, "API key"},
		{admin, map[string]any{"dataset": "../tiny"}, 400, `dataset "../tiny": must name a folder`},
		{admin, map[string]any{"dataset": ".."}, 400, `dataset "..": must name a folder`},
		{admin, map[string]any{"dataset": "nope"}, 404, `dataset "nope": no such folder`},
		{admin, map[string]any{"dataset": "golden"}, 400, `dataset "golden"`},
		{admin, map[string]any{"dataset": "tiny", "config": []string{"mine=colour=red"}}, 400, "config[0]"},
		{admin, map[string]any{"dataset": "tiny", "limit_queries": -1}, 400, "limit_queries = -1"},
		{admin, map[string]any{"dataset": "tiny", "resamples": 100000}, 400, "resamples = 100000"},
		{admin, map[string]any{"dataset": "tiny", "k": []int{0}}, 400, "k[0] = 0"},
		{admin, map[string]any{"dataset": "tiny", "baseline": "nobody"}, 400, `baseline "nobody"`},
		{admin, map[string]any{"dataset": "tiny", "colour": "red"}, 400, `unknown field "colour"`},
	} {
		r := b.do("POST", "/v1/eval", c.key, c.body)
		if msg := r.errMsg(t); r.status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("POST /v1/eval %v: %d %q, want %d with %q", c.body, r.status, msg, c.status, c.want)
		}
	}

}

func TestServe_EvalWithoutTheFolder(t *testing.T) {
	off := setup(t, opts{})
	offAdmin, _, err := off.e.CreateAdminKey(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/eval/datasets", "/v1/eval"} {
		method, body := "GET", any(nil)
		if p == "/v1/eval" {
			method, body = "POST", map[string]any{"dataset": "tiny"}
		}
		r := off.do(method, p, offAdmin, body)
		if msg := r.errMsg(t); r.status != 403 || !strings.Contains(msg, "--eval-datasets") {
			t.Errorf("%s %s without --eval-datasets: %d %q, want 403 naming the flag", method, p, r.status, msg)
		}
	}
}

func TestServe_EvalSingleUser(t *testing.T) {
	single := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.EvalDatasets = "../../eval/testdata" }})
	var list struct{ Datasets []string }
	single.must(200, "GET", "/v1/eval/datasets", "", nil, &list)
	if len(list.Datasets) != 1 {
		t.Errorf("datasets in single-user mode = %v", list.Datasets)
	}
}
