package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzFilterLines: whatever the input, every line passed on to the SDK is
// a JSON-RPC message or batch it decodes, every line answered is a
// JSON-RPC error, and every non-blank input line gets exactly one of the
// two.
func FuzzFilterLines(f *testing.F) {
	for _, s := range []string{
		"", "\n\n", "x\n", "{}\n", "[]\n", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, `{"jsonrpc":"2.0","id":"a"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", "42\n\"s\"\nnull\n", `{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var passed, answered bytes.Buffer
		out := &lockedWriter{w: &answered}
		if err := filterLines(strings.NewReader(in), &passed, out); err != nil {
			t.Fatal(err)
		}
		n := 0
		sc := bufio.NewScanner(&passed)
		sc.Buffer(nil, MaxLineBytes+1)
		for sc.Scan() {
			n++
			line := sc.Bytes()
			if id, err := invalidMessage(line); err != nil {
				t.Errorf("passed on %q, which is not a message (%v, id %s)", line, err, id)
			}
			if line[0] == '{' {
				if _, err := jsonrpc.DecodeMessage(line); err != nil {
					t.Errorf("passed on %q: %v", line, err)
				}
			}
		}
		sc = bufio.NewScanner(&answered)
		for sc.Scan() {
			n++
			var r struct {
				JSONRPC string `json:"jsonrpc"`
				Error   struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.JSONRPC != "2.0" || (r.Error.Code != codeParseError && r.Error.Code != codeInvalidRequest) {
				t.Errorf("answered %s (%v)", sc.Bytes(), err)
			}
		}
		want := 0
		for _, l := range strings.Split(in, "\n") {
			if strings.TrimSpace(l) != "" {
				want++
			}
		}
		if n != want {
			t.Errorf("%d non-blank lines in, %d passed on or answered", want, n)
		}
	})
}
