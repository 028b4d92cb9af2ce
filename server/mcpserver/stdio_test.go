package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// TestServeIO_KeepsTheSessionOnBadLines: each line that is not a JSON-RPC
// message gets its JSON-RPC error (-32700 malformed, -32600 not a message,
// with the message's id when it has one), and the session answers the
// next requests as if the line had not come.
func TestServeIO_KeepsTheSessionOnBadLines(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeIO(t.Context(), mcpserver.New(e, mcpserver.Fixed("alice"), nil), inR, outW)
		outW.Close()
	}()
	replies := bufio.NewScanner(outR)
	replies.Buffer(nil, 1<<20)
	type reply struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() reply {
		t.Helper()
		if !replies.Scan() {
			t.Fatalf("no reply: %v", replies.Err())
		}
		var r reply
		if err := json.Unmarshal(replies.Bytes(), &r); err != nil {
			t.Fatalf("reply %s: %v", replies.Bytes(), err)
		}
		return r
	}
	for _, tc := range []struct {
		line string
		code int
		id   string
	}{
		{"this is not json", -32700, "null"},
		{`{"jsonrpc": "2.0", "id": 5, "method": `, -32700, "null"},
		{"42", -32600, "null"},
		{"{}", -32600, "null"},
		{`{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}`, -32600, "7"},
		{`{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}`, -32600, "null"},
		{`{"jsonrpc": "2.0", "id": "a", "method": 5}`, -32600, `"a"`},
		{"[]", -32600, "null"},
		{strings.Repeat("x", mcpserver.MaxLineBytes+10), -32700, "null"},
	} {
		send(tc.line)
		r := next()
		if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id {
			t.Errorf("%.40q: reply %+v, id %s; want code %d, id %s", tc.line, r.Error, r.ID, tc.code, tc.id)
		}
		if tc.code == -32700 && !strings.Contains(r.Error.Message, "Parse error") {
			t.Errorf("%.40q: message %q", tc.line, r.Error.Message)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := next(); string(r.ID) != "1" || r.Error != nil || len(r.Result) == 0 {
		t.Fatalf("initialize after bad lines: %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send("not json either")
	if r := next(); r.Error == nil || r.Error.Code != -32700 {
		t.Fatalf("a bad line after initialize: %+v", r)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := next(); string(r.ID) != "2" || r.Error != nil || !strings.Contains(string(r.Result), "memory_recall") {
		t.Fatalf("tools/list: %+v", r)
	}
	inW.Close()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
		t.Errorf("ServeIO: %v", err)
	}
}
