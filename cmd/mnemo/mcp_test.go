package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %+v", tool, res.Content)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// TestMCP_StdioInProcess drives `mnemo mcp` through pipes standing in for
// stdin and stdout, with the SDK's client.
func TestMCP_StdioInProcess(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	stderr := &testenv.SyncBuffer{}
	a := &app{stdin: serverIn, stdout: serverOut, stderr: stderr, getenv: func(k string) string { return c.env[k] }}
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), a, []string{"mcp", "--profile", "me"})
		serverOut.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st mcpserver.StoreOutput
	mcpCall(t, cs, mcpserver.ToolStore, map[string]any{"content": "stdio memory about the Threadline deploy", "session": "s1"}, &st)
	var rc mcpserver.RecallOutput
	res := mcpCall(t, cs, mcpserver.ToolRecall, map[string]any{"query": "Threadline deploy"}, &rc)
	if len(rc.Results) != 1 || rc.Results[0].ID != st.ID {
		t.Errorf("recall = %+v", rc)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "Threadline deploy") {
		t.Errorf("readable text = %+v", res.Content)
	}
	cs.Close() // closes the server's stdin
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("mcp exited %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcp did not exit when stdin closed")
	}
	if out := c.ok("get", "--profile", "me", st.ID); !strings.Contains(out, "stdio memory") {
		t.Errorf("memory not stored in profile me: %s", out)
	}
	if code, _, _ := c.run("", "get", "--profile", "other", st.ID); code == 0 {
		t.Error("memory visible in another profile")
	}
}

// TestMCP_StdioProcess runs `mnemo mcp` as a real process over its stdio,
// as an MCP client launches it.
func TestMCP_StdioProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	t.Parallel()
	c := newCLI(t)
	cmd := exec.Command(os.Args[0], "mcp", "--profile", "me")
	cmd.Env = append(os.Environ(), "MNEMO_TEST_MAIN=1", "MNEMO_DB="+c.env["MNEMO_DB"], "MNEMO_HOME="+c.env["MNEMO_HOME"], "MNEMO_EMBEDDER=hash")
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st mcpserver.StoreOutput
	mcpCall(t, cs, mcpserver.ToolStore, map[string]any{"content": "process memory"}, &st)
	var fg mcpserver.ForgetOutput
	mcpCall(t, cs, mcpserver.ToolForget, map[string]any{"id": st.ID}, &fg)
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code, _, _ := c.run("", "get", "--profile", "me", st.ID); code == 0 {
		t.Error("forgotten memory still stored")
	}
}

func TestMCP_UsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, args := range [][]string{{"mcp"}, {"mcp", "--profile", "me", "extra"}} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}
