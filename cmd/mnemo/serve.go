package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// Serve defaults.
const (
	defaultServeAddr       = "127.0.0.1:7077"
	defaultShutdownTimeout = 15 * time.Second
)

// openServing opens the engine for a long-running command: unlike
// engineFlags.open, access statistics are flushed in the background
// (every second) rather than only at Close.
func (f *engineFlags) openServing(a *app, log *slog.Logger, replicas []string) (*mnemo.Engine, error) {
	path, err := a.dbPath(f.db)
	if err != nil {
		return nil, err
	}
	cfg, err := f.config(a)
	if err != nil {
		return nil, err
	}
	cfg.Logger = log
	cfg.Replicas = replicas
	if len(cfg.Replicas) == 0 {
		for r := range strings.SplitSeq(a.getenv("MNEMO_REPLICAS"), ",") {
			if r = strings.TrimSpace(r); r != "" {
				cfg.Replicas = append(cfg.Replicas, r)
			}
		}
	}
	return mnemo.Open(path, &cfg)
}

func cmdServe(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "serve")
	var ef engineFlags
	ef.register(fs)
	addr := fs.String("addr", defaultServeAddr, "address to listen on, host:port")
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile of single-user mode (default $MNEMO_PROFILE, else \""+httpapi.DefaultProfile+"\")")
	maxBody := fs.String("max-body", "1MiB", "largest request body, in bytes or with a KiB/MiB suffix; larger gets 413")
	handlerTimeout := fs.Duration("handler-timeout", httpapi.DefaultHandlerTimeout, "longest a request may take to handle; past it the client gets 503")
	headerTimeout := fs.Duration("header-timeout", 5*time.Second, "longest a client may take to send the request headers")
	readTimeout := fs.Duration("read-timeout", 30*time.Second, "longest a client may take to send a whole request")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "on SIGINT/SIGTERM, how long to wait for requests in flight")
	requireKeys := fs.Bool("require-keys", false, "refuse requests without an API key even while none exists")
	singleUser := fs.Bool("single-user", false, "serve without keys (loopback only) while no active API key exists, even if keys existed and were revoked")
	accessLog := fs.Bool("access-log", false, "log every request to stderr")
	evalDatasets := fs.String("eval-datasets", "", "a folder of dataset folders (as mnemo eval reads them) that POST /v1/eval may evaluate, for an admin key or in single-user mode (the inspector's Eval page runs them); default: no evaluations")
	evalTimeout := fs.Duration("eval-timeout", httpapi.DefaultEvalTimeout, "longest one POST /v1/eval may run")
	var replicas repeatFlag
	fs.Var(&replicas, "replica", "postgres:// URL of a streaming replica of the database to send recalls to (repeatable; default $MNEMO_REPLICAS, comma-separated); a recall carrying a write's Mnemo-Consistency header sees that write")
	reembedEvery := fs.Duration("reembed-every", defaultReembedEvery, "how often to embed memories stored without an embedding (the embedder was failing) and, on Postgres with pgvector, build the HNSW indexes profiles have grown into; 0 never")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo serve [--addr 127.0.0.1:7077] [--profile P] [--max-body 1MiB] [--require-keys | --single-user] [--access-log]

Serves the HTTP API (/v1/...), /metrics, /openapi.json, MCP at /mcp and
the web inspector at /ui.
Requests authenticate with "Authorization: Bearer KEY" (mnemo keys create);
/metrics needs an admin key (mnemo keys create --admin).
While no API key has ever existed, serve runs in single-user mode on
--profile and binds only loopback addresses. Revoked keys are kept: once a
key has existed, keys are required, unless --single-user asks to serve
without keys while none is active.`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments, got %q", strings.Join(pos, " "))
	}
	limit, err := parseSize(*maxBody)
	if err != nil {
		return usagef("--max-body %q: %v", *maxBody, err)
	}
	for name, d := range map[string]time.Duration{"--handler-timeout": *handlerTimeout, "--header-timeout": *headerTimeout,
		"--read-timeout": *readTimeout, "--idle-timeout": *idleTimeout, "--shutdown-timeout": *shutdownTimeout, "--eval-timeout": *evalTimeout} {
		if d <= 0 {
			return usagef("%s = %v: must be positive", name, d)
		}
	}
	if *profile != "" {
		if err := checkProfileFlag(*profile); err != nil {
			return err
		}
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q: want host:port, e.g. 127.0.0.1:7077", *addr)
	}
	if *singleUser && *requireKeys {
		return usagef("--single-user and --require-keys contradict each other: choose one")
	}
	if *evalDatasets != "" {
		if st, err := os.Stat(*evalDatasets); err != nil || !st.IsDir() {
			return usagef("--eval-datasets %q: not a folder", *evalDatasets)
		}
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := ef.openServing(a, log, replicas)
	if err != nil {
		return err
	}
	keys, err := e.Keys(ctx, "", false)
	if err != nil {
		e.Close()
		return err
	}
	everKeys, err := e.Keys(ctx, "", true)
	if err != nil {
		e.Close()
		return err
	}
	if *singleUser && len(keys) > 0 {
		e.Close()
		return usagef("--single-user: %d API keys are active; revoke them first (mnemo keys list, mnemo keys revoke ID)", len(keys))
	}
	loopback := isLoopbackHost(host)
	// Keys are enforced from the start when any exists or ever existed
	// (revoked keys are kept), and always beyond loopback: revoking every
	// key must not turn a server into an open one, unless --single-user
	// says so.
	mustAuth := *requireKeys || len(keys) > 0 || (len(everKeys) > 0 && !*singleUser) || !loopback
	if len(keys) == 0 && !loopback {
		e.Close()
		return usagef("--addr %s: no active API key exists, so serve would run in single-user mode, which binds only loopback "+
			"(127.0.0.1, ::1, localhost); create a key first: mnemo keys create --profile P", *addr)
	}
	api, err := httpapi.New(httpapi.Config{Engine: e, Profile: *profile, RequireKeys: mustAuth, IgnoreRevokedKeys: *singleUser, MaxBodyBytes: limit,
		HandlerTimeout: *handlerTimeout, Logger: log, AccessLog: *accessLog, Version: version(),
		EvalDatasets: *evalDatasets, EvalTimeout: *evalTimeout})
	if err != nil {
		e.Close()
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		e.Close()
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !mustAuth && !tcp.IP.IsLoopback() {
		ln.Close()
		e.Close()
		return usagef("--addr %s resolved to %s, which is not loopback: single-user mode binds only loopback", *addr, tcp.IP)
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: *headerTimeout,
		ReadTimeout:       *readTimeout,
		// The handler timeout answers 503 first; the write timeout only
		// cuts clients that stop reading.
		WriteTimeout:   *handlerTimeout + 10*time.Second,
		IdleTimeout:    *idleTimeout,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	mode := fmt.Sprintf("single-user mode, profile %q", api.Profile())
	if mustAuth {
		mode = fmt.Sprintf("API keys required, %d active", len(keys))
		if revoked := len(everKeys) - len(keys); revoked > 0 && len(keys) == 0 {
			mode += fmt.Sprintf(", %d revoked; create one with mnemo keys create, or serve without keys with --single-user", revoked)
		}
	}
	fmt.Fprintf(a.stderr, "mnemo serve: listening on http://%s (%s)\n", ln.Addr(), mode)

	stopBackfill := startBackfill(e, *reembedEvery, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// Drain: stop accepting, let requests in flight finish (every write
	// they acknowledged is committed), then flush access statistics and
	// checkpoint the WAL (Engine.Close).
	fmt.Fprintln(a.stderr, "mnemo serve: shutting down")
	api.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if errors.Is(shutErr, context.DeadlineExceeded) {
		srv.Close()
		shutErr = fmt.Errorf("shutdown: requests still running after %v were cut", *shutdownTimeout)
	}
	stopBackfill()
	closeErr := e.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return errors.Join(fmt.Errorf("serve: %w", serveErr), closeErr)
	}
	if err := errors.Join(shutErr, closeErr); err != nil {
		return err
	}
	fmt.Fprintln(a.stderr, "mnemo serve: stopped")
	return nil
}

// isLoopbackHost reports whether host (from host:port) names only the
// loopback interface. "" and unspecified addresses mean every interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// parseSize parses a byte count: "1048576", "512KiB", "1MiB", "1M", "64k".
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000 * 1000}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSpace(strings.TrimSuffix(lower, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, errors.New("want a positive size such as 1048576, 512KiB or 1MiB")
	}
	return n * mult, nil
}
