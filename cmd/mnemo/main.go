// Command mnemo is the command-line interface to mnemo's memory engine.
//
// It is a thin layer over the mnemo library: it reads flags and environment
// variables, opens an Engine, and prints results. Exit codes: 0 success,
// 2 usage or validation error (nothing written), 1 internal error (a full
// disk among them, said plainly), 3 for import: some lines were rejected,
// the others stored.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// app carries the process's streams and environment so commands are testable
// in process.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	mu      sync.Mutex
	closers []func() error // see onExit
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// exitNotFound is the exit code of a memory, profile or database that is
// not there.
const exitNotFound = 4

// usageError marks an error that exits with code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError is an error that makes mnemo exit with its own code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// exitErrorf returns an error that makes mnemo exit with code.
func exitErrorf(code int, format string, args ...any) error {
	return exitError{code: code, err: fmt.Errorf(format, args...)}
}

// usagef returns an error that makes mnemo exit with code 2.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func commands() map[string]command {
	return map[string]command{
		"fuse":     {"fuse ranked lists read from stdin", cmdFuse},
		"add":      {"remember one memory", cmdAdd},
		"import":   {"bulk-import memories from a JSONL file", cmdImport},
		"recall":   {"recall the memories that best match a query", cmdRecall},
		"get":      {"print one memory as JSON", cmdGet},
		"list":     {"list a profile's memories, a page at a time", cmdList},
		"update":   {"change fields of one memory", cmdUpdate},
		"export":   {"write a profile's memories as JSONL that import reads back", cmdExport},
		"version":  {"print mnemo's version", cmdVersion},
		"delete":   {"forget memories by id", cmdDelete},
		"settings": {"show or change recall settings", cmdSettings},
		"models":   {"install or list the built-in embedder's model", cmdModels},
		"embed":    {"print the embeddings of texts", cmdEmbed},
		"eval":     {"measure recall quality on a dataset, with significance tests", cmdEval},
		"bench":    {"measure recall latency on a profile's memories, or a ladder of corpus sizes", cmdBench},

		"serve":     {"serve the HTTP API and MCP (streamable HTTP at /mcp)", cmdServe},
		"mcp":       {"serve MCP on stdio for one profile", cmdMCP},
		"recollect": {"write the top memories for a prompt to a file (agent hooks)", cmdRecollect},
		"keys":      {"create, list or revoke API keys", cmdKeys},
		"reembed":   {"embed memories stored without an embedding, or of another model", cmdReembed},
		"index":     {"verify or rebuild the dense indexes' snapshots", cmdIndex},
		"copy":      {"copy memories, settings and keys between two stores (SQLite, Postgres)", cmdCopy},
		"migrate":   {"create or upgrade a database's schema", cmdMigrate},
		"openapi":   {"print the HTTP API's OpenAPI document", cmdOpenAPI},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one mnemo invocation and returns its exit code.
func run(ctx context.Context, a *app, args []string) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(a.stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(a.stderr, "mnemo: unknown command %q\n", args[0])
		printUsage(a.stderr, cmds)
		return 2
	}
	err := c.run(ctx, a, args[1:])
	if cerr := a.runExit(); cerr != nil && !errors.Is(err, errHelp) {
		err = errors.Join(err, cerr)
	}
	return exitCode(a.stderr, args[0], err)
}

func exitCode(stderr io.Writer, name string, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	if errors.Is(err, mnemotype.ErrStorageFull) {
		fmt.Fprintf(stderr, "mnemo %s: storage full: nothing was written; free disk space and run the command again (%v)\n", name, err)
		return 1
	}
	fmt.Fprintf(stderr, "mnemo %s: %v\n", name, err)
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) || isInvalid(err) {
		return 2
	}
	if errors.Is(err, mnemotype.ErrNotFound) {
		return exitNotFound
	}
	return 1
}

func printUsage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: mnemo <command> [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\n"+embedderHelp)
	fmt.Fprintln(w, "\nrun 'mnemo <command> -h' for a command's flags")
}
