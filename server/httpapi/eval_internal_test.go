package httpapi

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
)

// TestEval_OneAtATime: while an evaluation runs, another is refused with
// 409 instead of running beside it.
func TestEval_OneAtATime(t *testing.T) {
	t.Parallel()
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := New(Config{Engine: e, EvalDatasets: "../../eval/testdata"})
	if err != nil {
		t.Fatal(err)
	}
	s.evalBusy.Store(true)
	req := httptest.NewRequest("POST", "http://127.0.0.1/v1/eval", strings.NewReader(`{"dataset": "tiny"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "an evaluation is running") {
		t.Errorf("a second evaluation: %d %s, want 409", w.Code, w.Body)
	}
	s.evalBusy.Store(false)
	w = httptest.NewRecorder()
	req = httptest.NewRequest("POST", "http://127.0.0.1/v1/eval", strings.NewReader(`{"dataset": "tiny", "resamples": 50}`))
	req.Header.Set("Content-Type", "application/json")
	s.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Errorf("once the first ended: %d %s", w.Code, w.Body)
	}
}
