package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// The browser tests drive Debian's headless Chromium over CDP against a
// real server on 127.0.0.1 (a SQLite file in a temporary folder, the
// hashing embedder). They skip when Chromium is not installed, except
// under CI=true, where they fail (scripts/chromium.sh installs it). With
// MNEMO_UI_SCREENSHOTS=1 they write docs/ui/*.png at 1280×800 and 390×844.

// chromiumPath finds Chromium ($MNEMO_CHROMIUM, else chromium on $PATH).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MNEMO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Chromium is not installed (scripts/chromium.sh installs Debian's package)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// One Chromium serves every test of the package, each in a tab of its
// own; TestMain ends it.
var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// browser starts the shared Chromium once: headless, no sandbox (root),
// no GPU, no QUIC, none of its background requests, a new empty profile.
func browser(t *testing.T, bin string) context.Context {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "mnemo-chromium-")
		if err != nil {
			t.Fatal(err)
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(bin),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1280, 800),
		)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil { // start it
			t.Fatalf("start Chromium: %v", err)
		}
		shared.ctx, shared.dir = bctx, dir
		shared.cancel = func() {
			cancelBrowser()
			cancelAlloc()
		}
	})
	if shared.ctx == nil {
		t.Fatal("Chromium did not start")
	}
	return shared.ctx
}

// site is one test's server and browser tab.
type site struct {
	t    *testing.T
	e    *mnemo.Engine
	ts   *httptest.Server
	ctx  context.Context
	host string

	mu       sync.Mutex
	requests []string // every URL the page asked for
	problems []string // exceptions thrown and security messages
}

type siteOpts struct {
	requireKeys bool
	evalDir     string
}

// newSite starts the server and a browser with one tab on it.
func newSite(t *testing.T, o siteOpts) *site {
	t.Helper()
	bin := chromiumPath(t)
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	api, err := httpapi.New(httpapi.Config{Engine: e, RequireKeys: o.requireKeys, EvalDatasets: o.evalDir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	s := &site{t: t, e: e, ts: ts, host: u.Host}

	bctx := browser(t, bin)
	ctx, cancelTab := chromedp.NewContext(bctx)
	tctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
	})
	if err := chromedp.Listen(tctx, s.event); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	s.ctx = tctx
	t.Cleanup(s.checkNetwork)
	return s
}

// event records what the page requests and any exception or security
// message (a CSP violation).
func (s *site) event(ev any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		s.requests = append(s.requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		s.problems = append(s.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *log.EventEntryAdded:
		if e.Entry.Source == log.EntrySourceSecurity || e.Entry.Source == log.EntrySourceJavascript && e.Entry.Level == log.EntryLevelError {
			s.problems = append(s.problems, fmt.Sprintf("%s %s: %s", e.Entry.Source, e.Entry.Level, e.Entry.Text))
		}
	}
}

// checkNetwork fails the test on any request to another host than the
// server on 127.0.0.1, and on any exception or security message.
func (s *site) checkNetwork() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 && !s.t.Failed() && !s.t.Skipped() {
		s.t.Error("the page made no request at all: the network events were not seen")
	}
	for _, r := range s.requests {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || u.Host != s.host {
			s.t.Errorf("the page asked for %q: only http://%s may be asked", r, s.host)
		}
	}
	for _, p := range s.problems {
		s.t.Errorf("in the page: %s", p)
	}
}

// do runs browser steps, failing the test on an error.
func (s *site) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, steps...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// open loads path of the inspector and waits for its page to render.
func (s *site) open(path string) {
	s.t.Helper()
	s.do("open "+path, chromedp.Navigate(s.ts.URL+path), chromedp.WaitVisible(chromedp.CSS("main > *")))
}

// wait polls a JavaScript condition until it holds.
func (s *site) wait(what, cond string) {
	s.t.Helper()
	if _, err := chromedp.Run(s.ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		s.t.Fatalf("waiting for %s (%s): %v\npage text: %s", what, cond, err, s.js("document.querySelector('main').innerText.slice(0, 1500)"))
	}
}

// js evaluates an expression and returns its value as a string.
func (s *site) js(expr string) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v", expr, err)
	}
	if str, ok := v.(string); ok {
		return str
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// text is the text of the first element sel selects ("" if none).
func (s *site) text(sel string) string {
	s.t.Helper()
	b, _ := json.Marshal(sel)
	return s.js(fmt.Sprintf("(document.querySelector(%s)?.textContent ?? '')", b))
}

// typeInto replaces a control's value by typing, as a person does.
func (s *site) typeInto(sel, text string) {
	s.t.Helper()
	b, _ := json.Marshal(sel)
	s.js(fmt.Sprintf("(() => { const el = document.querySelector(%s); el.focus(); el.select?.(); el.value = ''; return ''; })()", b))
	s.do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// choose picks an option of a select, as a person does, with its change event.
func (s *site) choose(sel, value string) {
	s.t.Helper()
	b, _ := json.Marshal(sel)
	s.do("choose "+value, chromedp.SetValue(chromedp.CSS(sel), value))
	s.js(fmt.Sprintf("document.querySelector(%s).dispatchEvent(new Event('change', {bubbles: true})), ''", b))
}

func (s *site) click(sel string) {
	s.t.Helper()
	s.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// screenshot writes docs/ui/NAME-WxH.png at both sizes when
// MNEMO_UI_SCREENSHOTS is set, after ready holds again at each size, with
// the element scroll selects (if any) scrolled to the top.
func (s *site) screenshot(name, ready string, scroll ...string) {
	s.t.Helper()
	if os.Getenv("MNEMO_UI_SCREENSHOTS") == "" {
		return
	}
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		s.do("resize", chromedp.EmulateViewport(size[0], size[1], chromedp.EmulateScale(1)))
		if len(scroll) > 0 {
			b, _ := json.Marshal(scroll[0])
			s.js(fmt.Sprintf("document.querySelector(%s).scrollIntoView({block: 'start'}), ''", b))
		}
		s.wait("the page at its new size", ready+` && new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
		png, err := chromedp.Run(s.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			s.t.Fatal(err)
		}
		out := filepath.Join("..", "..", "docs", "ui", fmt.Sprintf("%s-%dx%d.png", name, size[0], size[1]))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			s.t.Fatal(err)
		}
		if len(png) > 1<<20 {
			s.t.Errorf("%s is %d bytes: over 1 MiB", out, len(png))
		}
	}
	s.do("resize back", chromedp.EmulateViewport(1280, 800))
	s.js("window.scrollTo(0, 0), ''")
}

// api calls the server directly (single-user mode, or with key).
func (s *site) api(method, path, key string, body any, out any) int {
	s.t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(method, s.ts.URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, err = http.NewRequest(method, s.ts.URL+path, nil)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			s.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return res.StatusCode
}

// seed stores the memories the pages show: two sessions of a
// conversation about releases, of several kinds, a day apart each.
func (s *site) seed(profile string) []string {
	s.t.Helper()
	base := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	texts := []struct{ session, actor, kind, content string }{
		{"s1", "Caroline", "episodic", "Released Threadline 2.3 with the JWT auth fix, after the release review"},
		{"s1", "Melanie", "episodic", "The release of Threadline 2.3 went out on Friday"},
		{"s1", "Caroline", "semantic", "Threadline releases ship on Fridays"},
		{"s1", "Melanie", "episodic", "Lunch at the Thai place with Maria"},
		{"s2", "Caroline", "episodic", "Planned the next release: Threadline 2.4 with single sign-on"},
		{"s2", "Melanie", "identity", "Melanie runs the staging database on db-7"},
		{"s2", "Caroline", "episodic", "Threadline release 2.4 slipped a week"},
	}
	var ids []string
	for i, m := range texts {
		imp := 0.5
		mm, err := s.e.Remember(s.ctx, mnemo.Input{Profile: profile, Session: m.session, Actor: m.actor, Kind: m.kind, Content: m.content,
			Project: "threadline", OccurredAt: base.Add(time.Duration(i) * 24 * time.Hour), CreatedAt: base.Add(time.Duration(i) * time.Minute),
			Importance: &imp, Metadata: json.RawMessage(fmt.Sprintf(`{"turn": %d}`, i+1))})
		if err != nil {
			s.t.Fatal(err)
		}
		ids = append(ids, mm.ID)
	}
	return ids
}

// fusedOrder is the ids of the fused ranking, in order.
func (s *site) fusedOrder() []string {
	var ids []string
	if err := json.Unmarshal([]byte(s.js(`JSON.stringify([...document.querySelectorAll('#r-results li.result')].map(li => li.dataset.id))`)), &ids); err != nil {
		s.t.Fatal(err)
	}
	return ids
}

func TestInspector_MemoriesPage(t *testing.T) {
	s := newSite(t, siteOpts{})
	ids := s.seed("default")
	s.open("/ui/memories")
	s.wait("the list", `document.querySelectorAll('#m-table tbody tr').length === 7`)
	if got := s.text("#m-summary"); !strings.Contains(got, "7 memories match") {
		t.Errorf("summary = %q", got)
	}
	s.screenshot("memories", `document.querySelectorAll('#m-table tbody tr').length === 7`)

	// Filter with the keyboard: type, Enter submits; the state is in the URL.
	s.typeInto("#m-session", "s2")
	s.do("submit with Enter", chromedp.KeyEvent("\r"))
	s.wait("the filtered list", `document.querySelectorAll('#m-table tbody tr').length === 3`)
	if loc := s.js("location.search"); !strings.Contains(loc, "session=s2") {
		t.Errorf("the URL after filtering is %q, want session=s2 in it", loc)
	}
	s.choose("#m-kind", "identity")
	s.click("#m-filters button[type=submit]")
	s.wait("kind and session", `document.querySelectorAll('#m-table tbody tr').length === 1`)

	// Page by page, with the API's cursor.
	s.open("/ui/memories?limit=3")
	s.wait("a first page of 3", `document.querySelectorAll('#m-table tbody tr').length === 3 && !document.querySelector('#m-next').disabled`)
	first := s.text("#m-table tbody tr:first-child td.content")
	s.click("#m-next")
	s.wait("the second page", `document.querySelector('#m-summary').textContent.includes('showing 4–6')`)
	s.click("#m-next")
	s.wait("the last page", `document.querySelector('#m-summary').textContent.includes('showing 7–7') && document.querySelector('#m-next').disabled`)
	s.click("#m-prev")
	s.click("#m-prev")
	s.wait("back on the first page", `document.querySelector('#m-summary').textContent.includes('showing 1–3')`)
	if got := s.text("#m-table tbody tr:first-child td.content"); got != first {
		t.Errorf("first page again starts with %q, want %q", got, first)
	}

	// Full-text search.
	s.open("/ui/memories?q=sign-on")
	s.wait("search results", `document.querySelector('#m-summary').textContent.includes('best full-text matches')`)
	if got := s.text("#m-table tbody tr:first-child td.content"); !strings.Contains(got, "single sign-on") {
		t.Errorf("first search result = %q", got)
	}

	// Open one (a deep link), edit it, see the API's error beside the field.
	s.open("/ui/memories?id=" + url.QueryEscape(ids[5]))
	s.wait("the memory", `document.querySelector('#m-detail dl')?.textContent.includes('db-7')`)
	for _, f := range []string{"occurred_at", "metadata", "actor", "importance"} {
		if !strings.Contains(s.text("#m-detail dl"), f) {
			t.Errorf("the memory's fields lack %s: %s", f, s.text("#m-detail dl"))
		}
	}
	s.screenshot("memory", `!!document.querySelector('#m-detail dl')`, "#m-detail")
	s.typeInto("#e-importance", "3")
	s.click("#e-save")
	s.wait("the error beside importance", `document.querySelector('#err-e-importance').textContent.includes('must be a number in [0, 1]')`)
	if got := s.text("#err-e-importance"); !strings.HasPrefix(got, "importance = 3") {
		t.Errorf("importance's error = %q, want the API's message", got)
	}
	s.typeInto("#e-importance", "0.9")
	s.typeInto("#e-actor", "Mel")
	s.click("#e-save")
	s.wait("saved", `document.querySelector('#e-status')?.textContent.includes('saved')`)
	var m mnemo.Memory
	s.api("GET", "/v1/memories/"+url.PathEscape(ids[5]), "", nil, &m)
	if m.Importance != 0.9 || m.Actor != "Mel" || m.Content != "Melanie runs the staging database on db-7" {
		t.Errorf("after the edit: importance %v, actor %q, content %q", m.Importance, m.Actor, m.Content)
	}

	// Delete it, after confirming.
	s.click("#m-delete")
	s.click("#m-del-yes")
	s.wait("the list without it", `document.querySelector('#m-detail').hidden && document.querySelector('#m-summary').textContent.includes('6 memories')`)
	if code := s.api("GET", "/v1/memories/"+url.PathEscape(ids[5]), "", nil, nil); code != 404 {
		t.Errorf("GET the deleted memory: %d, want 404", code)
	}
}

func TestInspector_DeleteByFilterWithPreview(t *testing.T) {
	s := newSite(t, siteOpts{})
	s.seed("default")
	s.open("/ui/memories")
	s.wait("the list", `document.querySelectorAll('#m-table tbody tr').length === 7`)
	s.typeInto("#m-session", "s1")
	s.choose("#m-kind", "episodic")
	s.click("#m-delete-matching")
	s.wait("the count", `document.querySelector('#m-bulk-count')?.textContent.includes('3 memories match')`)
	var page struct{ Total int }
	s.api("GET", "/v1/memories?total=true", "", nil, &page)
	if page.Total != 7 {
		t.Fatalf("after the preview %d memories are stored, want 7: the preview deleted", page.Total)
	}
	s.screenshot("delete-preview", `!!document.querySelector('#m-bulk-yes')`, "#m-filters")
	s.click("#m-bulk-yes")
	s.wait("the deletion", `document.querySelector('#m-bulk-done')?.textContent.includes('Deleted 3 memories')`)
	s.api("GET", "/v1/memories?total=true&session=s1", "", nil, &page)
	if page.Total != 1 {
		t.Errorf("session s1 holds %d memories after deleting its 3 episodic ones, want 1 (the semantic one)", page.Total)
	}
	s.api("GET", "/v1/memories?total=true&session=s2", "", nil, &page)
	if page.Total != 3 {
		t.Errorf("session s2 holds %d memories, want its 3", page.Total)
	}
	// No filter: nothing is offered.
	s.click("#m-filters button.secondary")
	s.wait("the cleared list", `document.querySelectorAll('#m-table tbody tr').length === 4`)
	s.click("#m-delete-matching")
	s.wait("the refusal", `document.querySelector('#m-bulk').textContent.includes('at least one filter')`)
}

func TestInspector_RecallPlayground(t *testing.T) {
	s := newSite(t, siteOpts{})
	s.seed("default")
	s.open("/ui/recall")
	s.wait("the settings in the controls", `document.querySelector('#r-wn-lexical').value !== ''`)
	s.typeInto("#r-q", "Threadline release")
	s.do("recall with Enter", chromedp.KeyEvent("\r"))
	s.wait("the fused ranking", `document.querySelectorAll('#r-results li.result').length >= 3`)
	for _, sel := range []string{".leg-list[data-leg=lexical] tbody tr", ".leg-list[data-leg=dense] tbody tr", "#r-rel", "#r-cf-table tbody tr", "#r-results .contrib .seg", "#r-results .relbar .floor"} {
		if n := s.js(fmt.Sprintf("document.querySelectorAll(%q).length", sel)); n == "0" {
			t.Errorf("no %s on the page", sel)
		}
	}
	if got := s.text("#r-rel"); !strings.Contains(got, "floor (min_relevance)0.20") || !strings.Contains(got, "answerable") {
		t.Errorf("relevance panel = %q", got)
	}
	before := s.fusedOrder()
	s.screenshot("recall", `document.querySelectorAll('#r-results li.result').length >= 3`)

	// Move the recency slider to its end with the keyboard: the recall runs
	// again and the ranking moves, the newest first.
	s.do("recency to 5", chromedp.Focus(chromedp.CSS("#r-w-recency")), chromedp.KeyEvent("\u0305"))
	s.wait("the ranking after the move", `document.querySelector('#r-moved')?.textContent.includes('moved')`)
	after := s.fusedOrder()
	if slices.Equal(before, after) {
		t.Fatalf("the ranking did not change when recency went from 0 to 5: %v", after)
	}
	if n := s.js(`document.querySelectorAll('#r-results .move.up, #r-results .move.down, #r-results .move.new').length`); n == "0" {
		t.Error("no up, down or new mark on the moved ranking")
	}
	if loc := s.js("decodeURIComponent(location.search)"); !strings.Contains(loc, "recency:5") {
		t.Errorf("the URL after the move is %q, want recency:5 in its weights", loc)
	}
	s.screenshot("recall-moved", `!!document.querySelector('#r-moved')`, "#r-fused-h")

	// Save them as the profile's settings, and read them back over the API.
	s.click("#r-save")
	s.wait("saved", `document.querySelector('#r-status').textContent.startsWith('Saved')`)
	var set map[string]any
	s.api("GET", "/v1/settings", "", nil, &set)
	if set["recency_weight"] != 5.0 || set["keyword_weight"] != 1.0 || set["strategy"] != "weighted_average" {
		t.Errorf("settings after Save: recency_weight %v, keyword_weight %v, strategy %v", set["recency_weight"], set["keyword_weight"], set["strategy"])
	}

	// The strategy select recalls again too.
	s.choose("#r-strategy", "rrf")
	s.wait("an rrf recall", `document.querySelector('#r-status').textContent.includes('· rrf')`)
}

func TestInspector_RecallDeepLink(t *testing.T) {
	s := newSite(t, siteOpts{})
	s.seed("default")
	s.open("/ui/recall?q=Threadline+release&session=s2&weights=lexical:1,dense:0,recency:0,access:0&strategy=rrf&k=10")
	s.wait("the linked recall", `document.querySelectorAll('#r-results li.result').length >= 1 && document.querySelector('#r-status').textContent.includes('rrf')`)
	if got := s.js(`[...document.querySelectorAll('#r-results li.result .meta')].every(m => m.textContent.includes('session s2'))`); got != "true" {
		t.Error("a result outside session s2 in a link scoped to it")
	}
	if got := s.js(`document.querySelector('#r-wn-dense').value + ' ' + document.querySelector('#r-k').value`); got != "0 10" {
		t.Errorf("dense weight and k from the link = %q, want 0 10", got)
	}
	if n := s.js(`document.querySelectorAll('.leg-list[data-leg=dense]').length`); n != "0" {
		t.Error("the dense leg ran at weight 0")
	}
}

func TestInspector_BadInputBesideTheField(t *testing.T) {
	s := newSite(t, siteOpts{})
	s.seed("default")
	s.open("/ui/recall?q=Threadline")
	s.wait("a recall", `document.querySelectorAll('#r-results li.result').length >= 1`)
	s.typeInto("#r-wn-lexical", "7")
	s.wait("the recall's 400 beside the lexical weight", `document.querySelector('#err-r-wn-lexical').textContent !== ''`)
	if got := s.text("#err-r-wn-lexical"); got != "weights.lexical = 7: must be a number in [0, 5]" {
		t.Errorf("beside the lexical weight: %q", got)
	}
	if got := s.js(`document.querySelector('#r-wn-lexical').getAttribute('aria-invalid')`); got != "true" {
		t.Errorf("aria-invalid = %q", got)
	}
	s.screenshot("recall-error", `document.querySelector('#err-r-wn-lexical').textContent !== ''`, ".fusion")
	s.click("#r-save")
	s.wait("the settings' 400 beside the lexical weight", `document.querySelector('#err-r-wn-lexical').textContent.startsWith('keyword_weight')`)
	var set map[string]any
	s.api("GET", "/v1/settings", "", nil, &set)
	if set["keyword_weight"] != 1.0 {
		t.Errorf("keyword_weight after a refused save = %v, want 1 (nothing written)", set["keyword_weight"])
	}
	s.typeInto("#r-wn-lexical", "1")
	s.wait("the lexical weight's error gone", `document.querySelector('#err-r-wn-lexical').textContent === ''`)
	s.click("details.scope summary")
	s.typeInto("#r-limit", "5000")
	s.click("#r-run")
	s.wait("the limit's error", `document.querySelector('#err-r-limit').textContent.includes('limit')`)
	s.open("/ui/memories")
	s.typeInto("#m-after", "last week")
	s.click("#m-filters button[type=submit]")
	s.wait("the time's error", `document.querySelector('#err-m-after').textContent.includes('RFC 3339')`)
}

func TestInspector_EvalPage(t *testing.T) {
	s := newSite(t, siteOpts{evalDir: "../../eval/testdata"})
	s.open("/ui/eval")
	report, err := filepath.Abs("../../docs/eval/locomo-dev.json")
	if err != nil {
		t.Fatal(err)
	}
	s.do("choose the file", chromedp.SetUploadFiles(chromedp.CSS("#ev-file"), []string{report}))
	s.wait("the report", `document.querySelectorAll('#ev-configs tbody tr').length >= 2 && document.querySelectorAll('#ev-report svg.chart').length >= 3`)
	if n := s.js(`document.querySelectorAll('#ev-cats tbody tr').length`); n != "5" {
		t.Errorf("category rows = %s, want locomo-dev's 5", n)
	}
	if got := s.text("#ev-cmp"); !strings.Contains(got, "p ") || !strings.Contains(got, "[") {
		t.Errorf("comparisons without intervals: %q", got)
	}
	s.screenshot("eval", `document.querySelectorAll('#ev-report svg.chart').length >= 3`, "#ev-report-h")
	s.screenshot("eval-charts", `document.querySelectorAll('#ev-report svg.chart').length >= 3`, "#ev-cmp")

	// Run one on the server; its report carries each mean's interval.
	s.wait("the datasets", `document.querySelector('#ev-dataset').value === 'tiny'`)
	s.typeInto("#ev-limit", "0")
	s.click("#ev-go")
	s.wait("the server's report", `document.querySelector('#ev-status').textContent.startsWith('done') && document.querySelector('#ev-report-h').textContent.startsWith('tiny')`)
	if n := s.js(`document.querySelectorAll('#ev-configs .ci').length`); n == "0" {
		t.Error("no interval in the per-configuration table of a report the server ran")
	}
	if loc := s.js("location.search"); !strings.Contains(loc, "dataset=tiny") {
		t.Errorf("the URL after the run is %q", loc)
	}
	s.typeInto("#ev-baseline", "nobody")
	s.click("#ev-go")
	s.wait("the baseline's error", `document.querySelector('#err-ev-baseline').textContent.includes('nobody')`)
}

func TestInspector_Keys(t *testing.T) {
	s := newSite(t, siteOpts{requireKeys: true})
	s.seed("alice")
	s.seed("bob")
	if _, err := s.e.Remember(s.ctx, mnemo.Input{Profile: "bob", Content: "bob's own memory about gardening"}); err != nil {
		t.Fatal(err)
	}
	alice, _, err := s.e.CreateKey(s.ctx, "alice", "ui")
	if err != nil {
		t.Fatal(err)
	}
	service, _, err := s.e.CreateServiceKey(s.ctx, "ui", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.open("/ui/memories")
	s.wait("the refusal", `document.querySelector('#m-form-error').textContent.includes('API key is required')`)
	s.typeInto("#conn-key", alice)
	s.do("use the key", chromedp.KeyEvent("\r"))
	s.wait("alice's memories", `document.querySelector('#m-summary').textContent.includes('7 memories match')`)
	if got := s.js(`sessionStorage.getItem('mnemo.key') === ` + fmt.Sprintf("%q", alice)); got != "true" {
		t.Error("the key is not in sessionStorage")
	}
	if strings.Contains(s.js("location.href"), alice) {
		t.Error("the key is in the URL")
	}
	// A profile key naming another profile: the API's 400 beside the field.
	s.typeInto("#conn-profile", "bob")
	s.click("#conn button[type=submit]")
	s.wait("the profile's error", `document.querySelector('#err-conn-profile').textContent.includes('own profile only')`)
	// A service key chooses the profile.
	s.typeInto("#conn-key", service)
	s.typeInto("#conn-profile", "bob")
	s.click("#conn button[type=submit]")
	s.wait("bob's memories", `document.querySelector('#m-summary').textContent.includes('8 memories match')`)
	if loc := s.js("location.search"); !strings.Contains(loc, "profile=bob") {
		t.Errorf("the URL with a profile chosen is %q", loc)
	}
	s.open("/ui/recall?profile=bob&q=gardening")
	s.wait("bob's recall", `document.querySelector('#r-results li.result .content')?.textContent.includes('gardening')`)
}

func TestInspector_Keyboard(t *testing.T) {
	s := newSite(t, siteOpts{})
	s.seed("default")
	s.open("/ui/recall?q=Threadline")
	s.wait("a recall", `document.querySelectorAll('#r-results li.result').length >= 1`)
	// Every control has a label or an accessible name.
	if got := s.js(`[...document.querySelectorAll('input, select, textarea')].filter(el => !el.labels?.length && !el.getAttribute('aria-label')).map(el => el.id).join(',')`); got != "" {
		t.Errorf("controls without a label: %s", got)
	}
	// Tab from the top reaches the query, its button, the sliders and Save,
	// in that order.
	s.js(`document.activeElement.blur(), ''`)
	var seen []string
	for range 40 {
		s.do("tab", chromedp.KeyEvent("\t"))
		seen = append(seen, s.js(`document.activeElement.id || document.activeElement.tagName`))
	}
	at := func(id string) int { return slices.Index(seen, id) }
	order := []string{"conn-key", "r-q", "r-run", "r-w-lexical", "r-wn-lexical", "r-w-dense", "r-strategy", "r-save"}
	for i, id := range order {
		if at(id) < 0 {
			t.Errorf("Tab never reaches #%s: %v", id, seen)
		} else if i > 0 && at(order[i-1]) > at(id) {
			t.Errorf("Tab reaches #%s before #%s: %v", id, order[i-1], seen)
		}
	}
	for _, page := range []string{"/ui/memories", "/ui/eval"} {
		s.open(page)
		if got := s.js(`[...document.querySelectorAll('input, select, textarea')].filter(el => !el.labels?.length && !el.getAttribute('aria-label')).map(el => el.id).join(',')`); got != "" {
			t.Errorf("%s: controls without a label: %s", page, got)
		}
	}
}
