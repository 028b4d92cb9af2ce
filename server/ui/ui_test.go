package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/server/ui"
)

// TestHandler_PagesAndHeaders: every page serves the shell, the assets
// their types, and every answer forbids any other origin.
func TestHandler_PagesAndHeaders(t *testing.T) {
	t.Parallel()
	h, err := ui.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		status       int
		typ, body    string
	}{
		{"GET", "/ui/", 200, "text/html", `<script type="module" src="/ui/assets/js/main.js">`},
		{"GET", "/ui/memories", 200, "text/html", "mnemo inspector"},
		{"GET", "/ui/recall", 200, "text/html", "mnemo inspector"},
		{"GET", "/ui/eval", 200, "text/html", "mnemo inspector"},
		{"GET", "/ui/assets/js/main.js", 200, "text/javascript", "import"},
		{"GET", "/ui/assets/app.css", 200, "text/css", ":root"},
		{"GET", "/ui/assets/icon.svg", 200, "image/svg+xml", "<svg"},
		{"HEAD", "/ui/recall", 200, "text/html", ""},
		{"GET", "/ui", 302, "", ""},
		{"GET", "/ui/elsewhere", 404, "", ""},
		{"GET", "/ui/assets/nothing.js", 404, "", ""},
		{"GET", "/ui/assets/index.html/../js/main.js", 404, "", ""},
		{"POST", "/ui/recall", 405, "", ""},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, "http://127.0.0.1"+c.path, nil))
		res := w.Result()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.status)
			continue
		}
		if got := res.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
			t.Errorf("%s %s: CSP %q", c.method, c.path, got)
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), c.typ) {
			t.Errorf("%s %s: Content-Type %q, want %s", c.method, c.path, res.Header.Get("Content-Type"), c.typ)
		}
		if !strings.Contains(string(body), c.body) {
			t.Errorf("%s %s: body lacks %q", c.method, c.path, c.body)
		}
	}
	// The policy names no origin but the page's own.
	for _, d := range strings.Split(ui.ContentSecurityPolicy, ";") {
		for _, src := range strings.Fields(d)[1:] {
			if src != "'self'" && src != "'none'" {
				t.Errorf("directive %q allows %s", strings.TrimSpace(d), src)
			}
		}
	}
	// A file is served once per version: its ETag answers 304.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/ui/assets/app.css", nil))
	req := httptest.NewRequest("GET", "http://127.0.0.1/ui/assets/app.css", nil)
	req.Header.Set("If-None-Match", w.Header().Get("ETag"))
	w2 := httptest.NewRecorder()
	h.ServeHTTP(w2, req)
	if w2.Code != http.StatusNotModified {
		t.Errorf("GET with the ETag: %d, want 304", w2.Code)
	}
}

// TestHandler_NoOtherOrigin: no asset names another origin (no CDN, no
// font service): every URL in them is a path of this server.
func TestHandler_NoOtherOrigin(t *testing.T) {
	t.Parallel()
	h, err := ui.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ui/", "/ui/assets/app.css", "/ui/assets/js/main.js", "/ui/assets/js/api.js", "/ui/assets/js/memories.js",
		"/ui/assets/js/recall.js", "/ui/assets/js/evalview.js", "/ui/assets/js/charts.js", "/ui/assets/js/dom.js", "/ui/assets/js/forms.js", "/ui/assets/js/url.js"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1"+p, nil))
		if w.Code != 200 {
			t.Errorf("GET %s: %d", p, w.Code)
			continue
		}
		body := w.Body.String()
		for _, bad := range []string{"https://", "http://", "//cdn", "innerHTML", "eval("} {
			if i := strings.Index(body, bad); i >= 0 && !(bad == "http://" && strings.Contains(body[i:min(len(body), i+40)], "www.w3.org/2000/svg")) {
				t.Errorf("%s holds %q: %s", p, bad, body[max(0, i-40):min(len(body), i+60)])
			}
		}
	}
}
