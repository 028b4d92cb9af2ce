// Package ui serves mnemo's web inspector: hand-written HTML, CSS and
// JavaScript modules embedded in the binary, which a browser loads from
// /ui and which call the same /v1 API as any client, with the key the user
// types in (kept in the tab's sessionStorage). Every answer carries a
// Content-Security-Policy that lets the page load and connect to its own
// origin only: no CDN, no other host, no inline script.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Pages are the inspector's pages: /ui/NAME serves the page shell, whose
// script renders NAME from the URL (a deep link to any state).
var Pages = []string{"memories", "recall", "eval"}

// ContentSecurityPolicy is sent with every answer of the inspector: its
// own origin for scripts, styles, images and requests; nothing else, no
// inline script, no frames, no form posts elsewhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the inspector under /ui.
type Handler struct {
	files map[string]file
}

type file struct {
	body []byte
	etag string
	typ  string
}

// New reads the embedded assets.
func New() (*Handler, error) {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		typ := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // the system's MIME table may lack or differ on these
		case ".js":
			typ = "text/javascript; charset=utf-8"
		case ".css":
			typ = "text/css; charset=utf-8"
		case ".html":
			typ = "text/html; charset=utf-8"
		case ".svg":
			typ = "image/svg+xml"
		}
		h.files["/ui/"+p] = file{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, typ: typ}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := h.files["/ui/assets/index.html"]; !ok {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

// ServeHTTP serves GET and HEAD of /ui (redirected to /ui/), /ui/ and
// /ui/PAGE (the page shell) and /ui/assets/... (the files).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "the inspector answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/ui" {
		target := "/ui/"
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusFound)
		return
	}
	name := strings.TrimPrefix(p, "/ui/")
	if name == "" || isPage(name) {
		p = "/ui/assets/index.html"
	}
	f, ok := h.files[p]
	if !ok || p == "/ui/assets/index.html" && !(name == "" || isPage(name)) {
		http.Error(w, "no such page in the inspector: "+p, http.StatusNotFound)
		return
	}
	hd.Set("Content-Type", f.typ)
	hd.Set("ETag", f.etag)
	hd.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

func isPage(name string) bool {
	for _, p := range Pages {
		if name == p {
			return true
		}
	}
	return false
}
