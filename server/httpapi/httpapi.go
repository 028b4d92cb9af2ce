// Package httpapi serves a mnemo Engine over HTTP/JSON: memories CRUD,
// hybrid recall, single-leg search, live per-profile settings, health,
// Prometheus metrics, an OpenAPI description, at /mcp the MCP server over
// streamable HTTP and, at /ui, the web inspector (package ui).
//
// Tenancy: every request acts on one profile, decided by its API key
// (Authorization: Bearer KEY): a profile key's own (a request may name it,
// no other), or for a service key the one the request names by the
// X-Mnemo-Profile header, the profile query parameter or a body's profile
// field, if the key may act on it. A key for profile A asking for B's
// memory gets 404, exactly as for an id that does not exist. While no API key has ever existed (and Config.RequireKeys is
// false) the server is in single-user mode: requests need no key and act on
// Config.Profile (or the profile they name), and only loopback Host headers are accepted (the caller,
// `mnemo serve`, also refuses to bind anything but loopback then). Revoked
// keys are kept, so revoking the last key does not reopen the server.
//
// An admin key (mnemo keys create --admin) reads /metrics, which needs one
// as soon as keys are required; it acts on no profile's memories.
package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/internal/jsonutf8"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
	"github.com/mnemo-dev/mnemo/server/ui"
)

// Defaults.
const (
	// DefaultProfile is the single-user mode's profile.
	DefaultProfile = "default"
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultHandlerTimeout bounds the time a /v1 handler may take.
	DefaultHandlerTimeout = 30 * time.Second
	// keyCheckInterval is how long the answer to "does any API key exist?"
	// is reused in single-user mode: a key created by `mnemo keys create`
	// while the server runs is enforced within this delay.
	keyCheckInterval = time.Second
)

// Config configures a Server.
type Config struct {
	// Engine is required; the Server does not close it.
	Engine *mnemo.Engine
	// Profile is the profile of single-user mode. Defaults to
	// DefaultProfile.
	Profile string
	// RequireKeys makes every request need an API key even when none
	// exists (no single-user mode). `mnemo serve` sets it when keys existed
	// at start or when it listens beyond loopback.
	RequireKeys bool
	// IgnoreRevokedKeys lets single-user mode resume while no active key
	// exists, even if keys existed and were revoked. By default a database
	// that has ever held a key requires keys for good. `mnemo serve
	// --single-user` sets it.
	IgnoreRevokedKeys bool
	// MaxBodyBytes bounds request bodies; larger ones get 413. Defaults to
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxRecallBodyBytes bounds the body of POST /v1/recall, whose lists
	// (exclude, sessions, actors) may hold up to mnemo.MaxListItems ids
	// each. Defaults to MaxBodyBytes plus room for one such list of ids of
	// the longest length.
	MaxRecallBodyBytes int64
	// HandlerTimeout bounds each /v1 request's handling; past it the client
	// gets 503. Defaults to DefaultHandlerTimeout.
	HandlerTimeout time.Duration
	// Version is reported by /healthz, /openapi.json and MCP.
	// Defaults to "dev".
	Version string
	// Logger receives errors and, with AccessLog, one line per request.
	// Defaults to discarding.
	Logger *slog.Logger
	// AccessLog logs every request at Info level.
	AccessLog bool
	// EvalDatasets is a folder of dataset folders (as `mnemo eval` reads
	// them) that POST /v1/eval may evaluate, for an admin key or in
	// single-user mode; "" turns the evaluation routes off (403).
	EvalDatasets string
	// EvalTimeout bounds one POST /v1/eval. Defaults to DefaultEvalTimeout.
	EvalTimeout time.Duration
}

// Server is the HTTP API. It is safe for concurrent use.
type Server struct {
	cfg     Config
	e       *mnemo.Engine
	log     *slog.Logger
	handler http.Handler
	routes  []route
	m       *metrics
	mcp     *mcp.Server
	mcpHTTP http.Handler
	// mcpAuthed is mcpHTTP behind the SDK's bearer middleware.
	mcpAuthed http.Handler

	draining atomic.Bool
	// evalBusy is set while POST /v1/eval runs (one at a time).
	evalBusy atomic.Bool

	keyMu      sync.Mutex
	keyChecked time.Time
	keysExist  bool
}

// route is one entry of the route table: the mux pattern is method+" "+path.
type route struct {
	method, path string
	// public routes need no API key.
	public bool
	// admin routes need an admin key once keys are required; other
	// routes refuse admin keys.
	admin bool
	// stream routes are not wrapped in the handler timeout (MCP streams).
	stream bool
	// long routes get Config.EvalTimeout instead of the handler timeout.
	long bool
	// bigBody routes take bodies up to Config.MaxRecallBodyBytes.
	bigBody bool
	// bodyProfile routes' bodies may name the profile (bodyProfile
	// resolves it); the handler is called with "" for a service key's
	// request that names none in its header or query.
	bodyProfile bool
	// params are the query parameters the route reads, besides profile on
	// every route that acts on one; any other is refused (a typo such as
	// "sesion" would otherwise silently widen a scope). A name ending in
	// "." allows every parameter it prefixes (metadata.KEY).
	params []string
	// anyParams routes take any query: the inspector's pages, whose
	// script reads its state from the URL, and the catch-all's 404.
	anyParams bool
	h         handlerFunc
}

// handlerFunc handles one request for profile ("" on public and admin
// routes; see route.bodyProfile). An error is written as JSON by
// writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request, profile string) error

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("httpapi: Config.Engine is nil")
	}
	if cfg.Profile == "" {
		cfg.Profile = DefaultProfile
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxRecallBodyBytes <= 0 {
		// An id of MaxIDBytes, quoted and escaped at worst 6 bytes per
		// byte, is rarely sent: room for quoting and commas is enough.
		cfg.MaxRecallBodyBytes = cfg.MaxBodyBytes + int64(mnemo.MaxListItems)*(mnemotype.MaxIDBytes+4)
	}
	if cfg.HandlerTimeout <= 0 {
		cfg.HandlerTimeout = DefaultHandlerTimeout
	}
	if cfg.EvalTimeout <= 0 {
		cfg.EvalTimeout = DefaultEvalTimeout
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, e: cfg.Engine, log: cfg.Logger, m: newMetrics()}
	s.mcp = mcpserver.New(cfg.Engine, s.mcpProfile, &mcpserver.Options{Version: cfg.Version,
		Logger: slog.New(warnOnly{cfg.Logger.Handler()}),
		OnCall: func(tool string, _ time.Duration, err error) { s.m.mcpCall(tool, err) }})
	s.mcpHTTP = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: cfg.MaxBodyBytes, SessionTimeout: 30 * time.Minute, Logger: cfg.Logger})
	s.mcpAuthed = auth.RequireBearerToken(mcpTokenInfo, nil)(s.mcpHTTP)
	s.routes = []route{
		{method: "POST", path: "/v1/memories", bodyProfile: true, h: s.createMemories},
		{method: "GET", path: "/v1/memories", params: listParams, h: s.listMemories},
		{method: "GET", path: "/v1/memories/{id}", h: s.getMemory},
		{method: "PATCH", path: "/v1/memories/{id}", bodyProfile: true, h: s.updateMemory},
		{method: "DELETE", path: "/v1/memories/{id}", h: s.deleteMemory},
		{method: "DELETE", path: "/v1/memories", params: deleteParams, h: s.deleteMemories},
		{method: "DELETE", path: "/v1/profile", h: s.deleteProfile},
		{method: "POST", path: "/v1/recall", bigBody: true, bodyProfile: true, h: s.recall},
		{method: "GET", path: "/v1/search/lexical", params: searchParams, h: s.searchLeg(mnemotype.LegLexical)},
		{method: "GET", path: "/v1/search/dense", params: searchParams, h: s.searchLeg(mnemotype.LegDense)},
		{method: "GET", path: "/v1/settings", h: s.getSettings},
		{method: "PATCH", path: "/v1/settings", bodyProfile: true, h: s.patchSettings},
		{method: "GET", path: "/healthz", public: true, h: s.healthz},
		{method: "GET", path: "/readyz", public: true, h: s.readyz},
		{method: "GET", path: "/metrics", admin: true, h: s.metrics},
		{method: "GET", path: "/v1/eval/datasets", admin: true, h: s.evalDatasets},
		{method: "POST", path: "/v1/eval", admin: true, long: true, h: s.runEval},
		{method: "GET", path: "/openapi.json", public: true, h: s.openapi},
		{method: "POST", path: "/mcp", stream: true, h: s.serveMCP},
		{method: "GET", path: "/mcp", stream: true, h: s.serveMCP},
		{method: "DELETE", path: "/mcp", stream: true, h: s.serveMCP},
	}
	mux := http.NewServeMux()
	for _, rt := range s.routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	// The web inspector: static files, public (they hold no data; the
	// page calls /v1 with the key its user gives it).
	inspector, err := ui.New()
	if err != nil {
		return nil, fmt.Errorf("httpapi: the inspector's files: %w", err)
	}
	for _, p := range []string{"/ui", "/ui/"} {
		mux.Handle(p, s.wrap(route{method: "GET", path: p, public: true, anyParams: true, h: func(w http.ResponseWriter, r *http.Request, _ string) error {
			inspector.ServeHTTP(w, r)
			return nil
		}}))
	}
	mux.Handle("/", s.wrap(route{path: "unmatched", public: true, anyParams: true, h: func(w http.ResponseWriter, r *http.Request, _ string) error {
		// The catch-all hides the mux's own 405: find the methods the
		// path does serve.
		var allow []string
		for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pat := mux.Handler(probe); pat != "/" && pat != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
				msg: fmt.Sprintf("%s %s: allowed methods are %s", r.Method, r.URL.Path, strings.Join(allow, ", "))}
		}
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)}
	}}))
	// Browsers' cross-site requests that change state are refused
	// (Sec-Fetch-Site / Origin), so a web page cannot drive a local server.
	s.handler = http.NewCrossOriginProtection().Handler(mux)
	return s, nil
}

// warnOnly passes on a handler's records of level Warn and above: the MCP
// SDK logs every session at Info, the tools' internal errors at Error.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }
func (h warnOnly) WithGroup(name string) slog.Handler    { return warnOnly{h.Handler.WithGroup(name)} }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Drain marks the server as shutting down: /readyz answers 503 and open
// MCP sessions are closed, so that http.Server.Shutdown does not wait on
// their streams. Requests in flight finish normally.
func (s *Server) Drain() {
	s.draining.Store(true)
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

// Profile returns the single-user mode's profile.
func (s *Server) Profile() string { return s.cfg.Profile }

// Routes lists the served routes as "METHOD /path" patterns.
func (s *Server) Routes() []string {
	out := make([]string, len(s.routes))
	for i, rt := range s.routes {
		out[i] = rt.method + " " + rt.path
	}
	return out
}

// ---------------------------------------------------------------------------
// Middleware.

// statusWriter records the status code for metrics and logs.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap builds a route's handler chain: metrics and access log, body limit,
// handler timeout, authentication, then the handler with errors written as
// JSON.
func (s *Server) wrap(rt route) http.Handler {
	name := rt.method + " " + rt.path
	if rt.method == "" {
		name = rt.path
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		profile := ""
		if !rt.public {
			ci, p, err := s.resolve(r, rt)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			profile = p
			r = r.WithContext(context.WithValue(r.Context(), callerKey{}, ci))
		}
		if err := checkURLText(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := rt.checkParams(r.URL.Query()); err != nil {
			s.writeError(w, r, err)
			return
		}
		if tok := r.Header.Get(ConsistencyHeader); tok != "" {
			r = r.WithContext(mnemo.WithConsistency(r.Context(), tok))
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && rt.path != "/v1/recall" && !rt.stream {
			w = &consistencyWriter{ResponseWriter: w, s: s, r: r}
		}
		if err := rt.h(w, r, profile); err != nil {
			s.writeError(w, r, err)
		}
	})
	var h http.Handler = inner
	timeout := s.cfg.HandlerTimeout
	if rt.long {
		timeout = s.cfg.EvalTimeout
	}
	if !rt.stream {
		h = withDeadline(inner, timeout)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.m.inflight.Add(1)
		defer s.m.inflight.Add(-1)
		sw := &statusWriter{ResponseWriter: w}
		if rt.long {
			// Past the server's write timeout, which fits the handler
			// timeout of the other routes.
			_ = http.NewResponseController(sw).SetWriteDeadline(time.Now().Add(timeout + 10*time.Second))
		}
		if r.Body != nil && !rt.stream { // the MCP handler applies the same limit itself
			limit := s.cfg.MaxBodyBytes
			if rt.bigBody {
				limit = s.cfg.MaxRecallBodyBytes
			}
			r.Body = http.MaxBytesReader(sw, r.Body, limit)
		}
		h.ServeHTTP(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		d := time.Since(start)
		s.m.request(name, r.Method, sw.code, d)
		if s.cfg.AccessLog {
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "route", name, "status", sw.code,
				"ms", float64(d.Microseconds())/1000, "remote", r.RemoteAddr)
		}
	})
}

// resolve authenticates r for route rt and returns its caller and the
// profile it acts on: "" on admin routes, on MCP (each tool call names its
// own, see mcpProfile), and for a service key's request to a route whose
// body may name the profile (bodyProfile resolves it).
func (s *Server) resolve(r *http.Request, rt route) (callerInfo, string, error) {
	c, err := s.authenticate(r, rt.admin)
	if err == nil {
		err = c.allowed(rt)
	}
	if err != nil || rt.admin {
		return callerInfo{c: c}, "", err
	}
	named, err := namedProfile(r)
	ci := callerInfo{c: c, named: named}
	switch {
	case err != nil:
		return ci, "", err
	case rt.stream:
		return ci, "", nil
	case rt.bodyProfile && named == "":
		return ci, c.profile, nil
	}
	p, err := c.act(named)
	return ci, p, err
}

// checkURLText refuses a path id or query parameter that is not valid
// UTF-8 (%FF in the URL) with a 400 naming it, as invalid text in a body is.
func checkURLText(r *http.Request) error {
	if id := r.PathValue("id"); !utf8.ValidString(id) {
		return badRequest("id is not valid UTF-8")
	}
	q := r.URL.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !utf8.ValidString(k) {
			return badRequest("a query parameter name is not valid UTF-8")
		}
		for _, v := range q[k] {
			if !utf8.ValidString(v) {
				return badRequest("query parameter %s is not valid UTF-8", k)
			}
		}
	}
	return nil
}

// checkParams refuses a query parameter the route does not read: every
// one but rt.params and, on a route acting on a profile, profile (read by
// the middleware).
func (rt route) checkParams(q url.Values) error {
	if rt.anyParams {
		return nil
	}
	allowed := rt.params
	if !rt.public && !rt.admin {
		allowed = append(slices.Clip(allowed), paramProfile)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.ContainsFunc(allowed, func(a string) bool {
			return a == k || strings.HasSuffix(a, ".") && strings.HasPrefix(k, a)
		}) {
			if len(allowed) == 0 {
				return badRequest("unknown query parameter %q: %s %s takes none", k, rt.method, rt.path)
			}
			return badRequest("unknown query parameter %q: %s %s takes %s", k, rt.method, rt.path, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// caller is who a request acts as.
type caller struct {
	// profile is the profile the request acts on: its profile key's, or
	// the single-user profile; "" for an admin or a service key.
	profile string
	// admin is set for an admin key.
	admin bool
	// singleUser is set in single-user mode (no key).
	singleUser bool
	// service is the key of a service (role service), nil otherwise.
	service *mnemo.APIKey
}

// allowed refuses an admin key on a route acting on a profile, and a
// profile or service key on an admin route.
func (c caller) allowed(rt route) error {
	switch {
	case rt.admin && !c.admin && !c.singleUser:
		return &apiError{status: http.StatusForbidden, code: "forbidden",
			msg: "this route needs an admin key, not a profile or service key (create one with `mnemo keys create --admin`)"}
	case !rt.admin && c.admin:
		return &apiError{status: http.StatusForbidden, code: "forbidden",
			msg: "an admin key acts on no profile's memories: use a profile key (mnemo keys create --profile P) or a service key (mnemo keys create --service)"}
	}
	return nil
}

// Where a request names its profile, besides a body's "profile" field.
const (
	headerProfile = "X-Mnemo-Profile"
	paramProfile  = "profile"
)

// errNoProfile refuses a service key's request that names no profile.
var errNoProfile = badRequest("a service key acts on the profile the request names: send the %s header, the %s query parameter or a \"profile\" field in the body",
	headerProfile, paramProfile)

// act returns the profile a request of c acts on when it names named ("":
// none). A service key acts on the profile named, if the key may; a
// profile key only on its own (naming it is allowed); single-user mode on
// the profile named, else its own.
func (c caller) act(named string) (string, error) {
	if named != "" {
		if err := mnemotype.CheckProfile(named); err != nil {
			return "", err
		}
	}
	switch {
	case c.service != nil && named == "":
		return "", errNoProfile
	case c.service != nil && !c.service.ActsOn(named):
		return "", &apiError{status: http.StatusForbidden, code: "forbidden",
			msg: fmt.Sprintf("this service key may not act on profile %q (see mnemo keys list)", named)}
	case c.service != nil, c.singleUser && named != "":
		return named, nil
	case named != "" && named != c.profile:
		return "", badRequest("profile %q: this API key acts on its own profile only; naming another needs a service key (mnemo keys create --service)", named)
	}
	return c.profile, nil
}

// namedProfile is the profile a request names in its header or query
// ("" if neither); naming two different ones is refused.
func namedProfile(r *http.Request) (string, error) {
	hs := r.Header.Values(headerProfile)
	qs := r.URL.Query()[paramProfile]
	if len(hs) > 1 || len(qs) > 1 {
		return "", badRequest("name the profile once (the %s header or the %s query parameter)", headerProfile, paramProfile)
	}
	var h, q string
	if len(hs) == 1 {
		// HTTP has already trimmed the value's surrounding spaces and tabs
		// (RFC 9110's optional white space is not part of a field value).
		if h = hs[0]; h == "" {
			return "", badRequest("the %s header is empty", headerProfile)
		}
	}
	if len(qs) == 1 {
		if q = qs[0]; q == "" {
			return "", badRequest("the %s query parameter is empty", paramProfile)
		}
	}
	if h != "" && q != "" && h != q {
		return "", badRequest("the %s header (%q) and the %s query parameter (%q) name different profiles", headerProfile, h, paramProfile, q)
	}
	return cmp.Or(h, q), nil
}

// callerKey carries a request's caller and the profile its header or
// query named, for handlers whose body may name the profile
// (bodyProfile) and for MCP.
type callerKey struct{}

type callerInfo struct {
	c     caller
	named string
}

// bodyProfile returns the profile a request acts on when its body names
// body (nil: not named); profile is what the header or query resolved to
// ("" when a service key's request named none there).
func bodyProfile(r *http.Request, profile string, body *string) (string, error) {
	ci, ok := r.Context().Value(callerKey{}).(callerInfo)
	if !ok { // a public route: never reached with a body profile
		return "", errors.New("httpapi: no caller in the request's context")
	}
	if body == nil {
		if profile == "" {
			return "", errNoProfile
		}
		return profile, nil
	}
	if *body == "" {
		return "", badRequest("profile is empty")
	}
	if ci.named != "" && ci.named != *body {
		return "", badRequest("the body's profile %q differs from the %q the header or query names", *body, ci.named)
	}
	return ci.c.act(*body)
}

// authenticate returns who the request acts as: its API key, or the
// single-user profile while keys are not required. admin says the route
// needs an admin key, for the message of a missing one.
func (s *Server) authenticate(r *http.Request, admin bool) (caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return caller{}, errUnauthorized("the Authorization header must be \"Bearer KEY\"")
		}
		k, err := s.e.Authenticate(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, mnemo.ErrUnknownKey) {
			return caller{}, errUnauthorized("unknown or revoked API key")
		}
		if err != nil {
			return caller{}, err
		}
		switch k.Role {
		case mnemo.KeyRoleAdmin:
			return caller{admin: true}, nil
		case mnemo.KeyRoleService:
			return caller{service: &k}, nil
		}
		return caller{profile: k.Profile}, nil
	}
	need, err := s.keysRequired(r.Context())
	if err != nil {
		return caller{}, err
	}
	if need && admin {
		return caller{}, errUnauthorized("an admin API key is required: send Authorization: Bearer KEY (create one with `mnemo keys create --admin`)")
	}
	if need {
		return caller{}, errUnauthorized("an API key is required: send Authorization: Bearer KEY (create one with `mnemo keys create --profile P`)")
	}
	if !loopbackHost(r.Host) {
		// Single-user mode trusts the loopback interface; a foreign Host
		// header means DNS rebinding or a proxy, both refused.
		return caller{}, &apiError{status: http.StatusForbidden, code: "forbidden",
			msg: fmt.Sprintf("single-user mode serves only loopback hosts, not %q: create an API key to serve others", r.Host)}
	}
	return caller{profile: s.cfg.Profile, singleUser: true}, nil
}

// keysRequired reports whether requests need an API key: always with
// RequireKeys, else as soon as any key exists, revoked keys included
// (active keys only with IgnoreRevokedKeys).
func (s *Server) keysRequired(ctx context.Context) (bool, error) {
	if s.cfg.RequireKeys {
		return true, nil
	}
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if !s.keyChecked.IsZero() && time.Since(s.keyChecked) < keyCheckInterval {
		return s.keysExist, nil
	}
	ks, err := s.e.Keys(ctx, "", !s.cfg.IgnoreRevokedKeys)
	if err != nil {
		return true, err
	}
	s.keysExist, s.keyChecked = len(ks) > 0, time.Now()
	return s.keysExist, nil
}

// loopbackHost reports whether a Host header names the loopback interface.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ---------------------------------------------------------------------------
// Errors.

// apiError is an error with its HTTP status and machine-readable code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: "invalid", msg: fmt.Sprintf(format, args...)}
}

func errUnauthorized(msg string) error {
	return &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: msg}
}

// errorBody is every error response's JSON.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// writeError maps err to a status: ErrExists 409 (an id already stored
// with another memory), ErrInvalid 400, ErrNotFound 404 (also for another
// profile's ids), a body over the limit 413, a full disk or database 507,
// a closed engine or an expired deadline 503, anything else 500; the
// details of 507 and 500 go only to the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mbe):
		ae = &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large",
			msg: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)}
	case errors.Is(err, mnemotype.ErrStorageFull):
		s.log.Error("storage full", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{status: http.StatusInsufficientStorage, code: "storage_full", msg: "storage full: nothing was written"}
	case errors.Is(err, mnemotype.ErrExists):
		ae = &apiError{status: http.StatusConflict, code: "conflict", msg: strings.TrimPrefix(err.Error(), mnemotype.ErrInvalid.Error()+": ")}
	case errors.Is(err, mnemotype.ErrInvalid):
		ae = &apiError{status: http.StatusBadRequest, code: "invalid", msg: strings.TrimPrefix(err.Error(), mnemotype.ErrInvalid.Error()+": ")}
	case errors.Is(err, mnemotype.ErrDimensionMismatch):
		ae = &apiError{status: http.StatusBadRequest, code: "invalid", msg: err.Error()}
	case errors.Is(err, mnemotype.ErrNotFound):
		ae = &apiError{status: http.StatusNotFound, code: "not_found", msg: "memory not found"}
		if id := r.PathValue("id"); id != "" {
			ae.msg = fmt.Sprintf("memory %s not found", id)
		}
	case errors.Is(err, mnemotype.ErrClosed):
		ae = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "the server is shutting down"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		ae = &apiError{status: http.StatusServiceUnavailable, code: "timeout", msg: "the request was cancelled or took too long"}
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{status: http.StatusInternalServerError, code: "internal", msg: "internal error (see the server log)"}
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mnemo"`)
	}
	writeJSON(w, ae.status, errorBody{Error: ae.msg, Code: ae.code})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "encode response: " + err.Error(), Code: "internal"})
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// With its length said, an answer of more than net/http's 2 KiB
	// buffer goes out as it is, not in chunks the client must parse.
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeJSON decodes the request body into v, strictly: a JSON content
// type (a missing one is refused like any other, on every route that reads
// a body), valid UTF-8, one value, no unknown fields. Errors say where the
// body went wrong.
func decodeJSON(r *http.Request, v any) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
			msg: "Content-Type is missing: send Content-Type: application/json"}
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
			msg: fmt.Sprintf("Content-Type %q: send application/json", ct)}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("read request body: %v", err)
	}
	if !utf8.Valid(raw) {
		// encoding/json would replace the invalid bytes with U+FFFD and
		// store text the client never sent.
		return invalidUTF8(raw)
	}
	body := &countingReader{r: bytes.NewReader(raw)}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		offset := dec.InputOffset()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The decoder reports where the value began; the body ended
			// where reading stopped.
			offset = body.n
		}
		return jsonError(err, offset, raw)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("malformed JSON at offset %d: data after the JSON value", dec.InputOffset())
	}
	return nil
}

// invalidUTF8 is the 400 for a body that is not valid UTF-8, naming the
// JSON field whose key or string value holds the first invalid byte
// ("memories[1].content", "metadata.note") when there is one.
func invalidUTF8(body []byte) error {
	field, off := jsonutf8.FirstInvalid(body)
	if field != "" {
		return badRequest("%s is not valid UTF-8", field)
	}
	return badRequest("request body is not valid UTF-8 (at byte offset %d)", off)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// jsonError turns a decoding error into a 400 that gives the byte offset.
func jsonError(err error, offset int64, body []byte) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	var tpe *time.ParseError
	switch {
	case errors.As(err, &tpe):
		field := jsonutf8.FieldOfString(body, tpe.Value)
		if field == "" {
			field = "a time"
		}
		return badRequest("%s = %q: must be an RFC 3339 time in years %04d-%04d, such as 2023-05-08T13:56:00Z",
			field, tpe.Value, mnemotype.MinYear, mnemotype.MaxYear)
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON at offset %d: unexpected end of input", offset)
	case errors.As(err, &syn):
		return badRequest("malformed JSON at offset %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := jsonutf8.ValueAt(body, typ.Offset)
		if field == "" {
			field = typ.Field
		}
		if i := strings.LastIndex(field, "memoryIn."); i >= 0 {
			// A field of the embedded single memory: name it as sent.
			field = field[:i] + field[i+len("memoryIn."):]
		}
		if field == "" {
			field = "the body"
		}
		if typ.Offset == 0 { // from a type's own UnmarshalJSON, which knows no offset
			return badRequest("malformed JSON: %s must be %s, not %s", field, jsonKind(typ.Type.String()), typ.Value)
		}
		return badRequest("malformed JSON at offset %d: %s must be %s, not %s", typ.Offset, field, jsonKind(typ.Type.String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown field %s at offset %d", strings.TrimPrefix(err.Error(), "json: unknown field "), offset)
	default:
		return badRequest("malformed JSON at offset %d: %s", offset, strings.TrimPrefix(err.Error(), "json: "))
	}
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(goType string) string {
	switch {
	case goType == "mnemotype.StringList":
		return "a string or an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "httpapi."), strings.HasPrefix(goType, "struct"):
		return "an object"
	case goType == "string" || goType == "*string":
		return "a string"
	case goType == "bool" || goType == "*bool":
		return "a boolean"
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "float"):
		return "a number"
	case goType == "time.Time" || goType == "*time.Time":
		return "an RFC 3339 time string"
	}
	return "a " + goType
}

// ---------------------------------------------------------------------------
// Health, metrics, MCP.

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ string) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.cfg.Version})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ string) error {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return nil
	}
	if err := s.e.Ping(r.Context()); err != nil {
		s.log.Warn("readiness check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "the database does not answer"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// metrics serves the Prometheus text: server-wide counts, every profile's
// together, so the route needs an admin key once keys are required (in
// single-user mode there is one profile, on loopback).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, _ string) error {
	g := gauges{ready: !s.draining.Load()}
	profiles := map[string]bool{}
	if ks, err := s.e.Keys(r.Context(), "", false); err == nil {
		g.keys = len(ks)
		for _, k := range ks {
			if k.Role == mnemo.KeyRoleProfile {
				profiles[k.Profile] = true
			}
		}
	}
	if !s.cfg.RequireKeys {
		profiles[s.cfg.Profile] = true
	}
	for p := range profiles {
		if n, err := s.e.Count(r.Context(), p); err == nil {
			g.memories += n
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	return s.m.write(w, g)
}

// serveMCP serves the MCP streamable HTTP transport. With API keys the
// SDK's bearer middleware puts the key's profile in the request's token
// info, which binds the MCP session to that profile (another key cannot
// use the session) and names the profile for every tool call.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, _ string) error {
	if r.Method == http.MethodGet {
		// The session's SSE stream outlives the server's read and write
		// timeouts (POSTs keep them: their bodies and answers are short).
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		_ = rc.SetReadDeadline(time.Time{})
	}
	if r.Method == http.MethodPost && r.Body != nil {
		// The SDK decodes with encoding/json, which would replace invalid
		// UTF-8 in tool arguments; a body over the limit is left for the
		// SDK to refuse.
		raw, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
		if err != nil {
			return badRequest("read request body: %v", err)
		}
		if int64(len(raw)) <= s.cfg.MaxBodyBytes && !utf8.Valid(raw) {
			return invalidUTF8(raw)
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
	}
	if ci, ok := r.Context().Value(callerKey{}).(callerInfo); ok && ci.named != "" {
		// A tool call reads the profile the request names from the
		// header; the ?profile= query parameter names it as well
		// (namedProfile has checked that the two agree).
		r.Header.Set(headerProfile, ci.named)
	}
	if r.Header.Get("Authorization") == "" { // single-user mode: authenticate let it through
		s.mcpHTTP.ServeHTTP(w, r)
		return nil
	}
	s.mcpAuthed.ServeHTTP(w, r)
	return nil
}

// mcpTokenInfo is the SDK's token verifier. authenticate has already
// checked the key and put the caller in the request's context; the token's
// user id, which binds an MCP session to one key, names the key's role and
// its profile or id, so that no profile name equals a service key's.
func mcpTokenInfo(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	ci, ok := r.Context().Value(callerKey{}).(callerInfo)
	user := "profile " + ci.c.profile
	if ci.c.service != nil {
		user = "service " + ci.c.service.ID
	}
	if !ok || (ci.c.service == nil && ci.c.profile == "") {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{mcpCallerKey: ci}}, nil
}

// mcpCallerKey holds the callerInfo in a token's Extra.
const mcpCallerKey = "mnemo.caller"

// mcpProfile names a tool call's profile, as act does for an HTTP request:
// named is the tool's profile argument ("" when absent), and the
// X-Mnemo-Profile header of the HTTP request that carried the call names
// it too (they must agree). Without a key, it is the single-user mode's.
func (s *Server) mcpProfile(ctx context.Context, req *mcp.CallToolRequest, named string) (string, error) {
	if req != nil && req.Extra != nil {
		if h := req.Extra.Header.Get(headerProfile); h != "" {
			if named != "" && named != h {
				return "", fmt.Errorf("the profile argument %q differs from the %q the %s header names", named, h, headerProfile)
			}
			named = h
		}
	}
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		ci, ok := req.Extra.TokenInfo.Extra[mcpCallerKey].(callerInfo)
		if !ok {
			s.log.Error("MCP tool call: no caller in the token")
			return "", errors.New("internal error (see server log)")
		}
		return ci.c.act(named)
	}
	need, err := s.keysRequired(ctx)
	if err != nil {
		s.log.Error("MCP tool call: check API keys", "err", err)
		return "", errors.New("internal error (see server log)")
	}
	if need {
		return "", errors.New("an API key is required")
	}
	return caller{profile: s.cfg.Profile, singleUser: true}.act(named)
}

// ConsistencyHeader carries read-your-writes across servers and read
// replicas: a successful write answers with the position it reached
// (Engine.Consistency; absent when every read sees every write), and a
// recall sent with it sees that write.
const ConsistencyHeader = "Mnemo-Consistency"

// consistencyWriter adds ConsistencyHeader to a write's successful
// answer, as its status is written.
type consistencyWriter struct {
	http.ResponseWriter
	s    *Server
	r    *http.Request
	done bool
}

func (c *consistencyWriter) WriteHeader(code int) {
	if !c.done {
		c.done = true
		if code >= 200 && code < 300 {
			if tok, err := c.s.e.Consistency(c.r.Context()); err == nil && tok != "" {
				c.Header().Set(ConsistencyHeader, tok)
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *consistencyWriter) Write(b []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (c *consistencyWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
