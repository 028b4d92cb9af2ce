package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// cmdMCP serves MCP on stdin/stdout for one profile, until stdin ends or
// the process is interrupted. stdout carries only the protocol; logs go to
// stderr.
func cmdMCP(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "mcp")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile the tools act on (required) (default $MNEMO_PROFILE)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo mcp --profile P

Serves the Model Context Protocol on stdio (tools memory_store,
memory_recall, memory_forget). For an MCP client's configuration:
  {"command": "mnemo", "args": ["mcp", "--profile", "me"]}`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("mcp takes no arguments, got %q", strings.Join(pos, " "))
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := ef.openServing(a, log, nil)
	if err != nil {
		return err
	}
	srv := mcpserver.New(e, mcpserver.Fixed(*profile), &mcpserver.Options{Version: version(), Logger: log})
	runErr := mcpserver.ServeIO(ctx, srv, a.stdin, a.stdout)
	closeErr := e.Close()
	// The client closing stdin, or an interrupt, is the normal way out.
	if runErr != nil && (errors.Is(runErr, io.EOF) || errors.Is(runErr, context.Canceled) || errors.Is(runErr, mcp.ErrConnectionClosed)) {
		runErr = nil
	}
	return errors.Join(runErr, closeErr)
}
