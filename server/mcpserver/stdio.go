package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one line of ServeIO's input, as the SDK's own
// transport bounds it.
const MaxLineBytes = mcp.DefaultMaxLineLength

// JSON-RPC error codes of the lines ServeIO answers itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// ServeIO runs srv over newline-delimited JSON-RPC on r and w (an MCP
// client on stdio) until r ends or ctx is done. A line that is not a
// JSON-RPC message, or a batch of them, is answered with a JSON-RPC error —
// -32700 for malformed JSON or a line over MaxLineBytes, -32600 for JSON
// that is no message (a bare value, no "jsonrpc": "2.0", neither method
// nor id), with the message's id when it has one, else null — and the
// session goes on: the SDK's transport alone would end the session on it.
func ServeIO(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer) error {
	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(filterLines(r, pw, out)) }()
	err := srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: out})
	pr.Close() // unblocks the filter if the session ended first
	return err
}

// filterLines copies r's JSON-RPC lines to pw and answers the others on
// out. It returns nil at the end of r.
func filterLines(r io.Reader, pw io.Writer, out *lockedWriter) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxLineBytes)
		switch trimmed := bytes.TrimSpace(line); {
		case tooLong:
			if werr := out.rpcError(codeParseError, fmt.Sprintf("Parse error: a line longer than %d bytes", MaxLineBytes)); werr != nil {
				return werr
			}
		case len(trimmed) == 0:
		case !json.Valid(trimmed):
			if werr := out.rpcError(codeParseError, "Parse error: the line is not valid JSON"); werr != nil {
				return werr
			}
		default:
			if id, bad := invalidMessage(trimmed); bad != nil {
				if werr := out.rpcErrorID(id, codeInvalidRequest, "Invalid Request: "+bad.Error()); werr != nil {
					return werr
				}
				break
			}
			if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// invalidMessage reports why the JSON value line is not a JSON-RPC
// message or batch (nil if it is one), with the message's id when it has a
// valid one (else nil).
func invalidMessage(line []byte) (json.RawMessage, error) {
	var msgs []json.RawMessage
	switch line[0] {
	case '[':
		if err := json.Unmarshal(line, &msgs); err != nil || len(msgs) == 0 {
			return nil, errors.New("a batch is a non-empty array of JSON-RPC messages")
		}
	case '{':
		msgs = []json.RawMessage{line}
	default:
		return nil, errors.New("a JSON-RPC message is a JSON object")
	}
	for _, m := range msgs {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			var id json.RawMessage
			if len(msgs) == 1 && json.Unmarshal(m, &probe) == nil && len(probe.ID) > 0 && (probe.ID[0] == '"' || probe.ID[0] == '-' || probe.ID[0] >= '0' && probe.ID[0] <= '9') {
				id = probe.ID
			}
			return id, err
		}
	}
	return nil, nil
}

// readLine reads up to and without the next newline; past max bytes it
// discards the rest of the line and reports tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

// lockedWriter serialises the SDK's writes and ServeIO's error replies,
// one whole line each.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves w open: it is the caller's (stdout).
func (l *lockedWriter) Close() error { return nil }

// rpcError writes a JSON-RPC error response with a null id.
func (l *lockedWriter) rpcError(code int, msg string) error {
	return l.rpcErrorID(nil, code, msg)
}

// rpcErrorID writes a JSON-RPC error response for the request id (nil:
// null).
func (l *lockedWriter) rpcErrorID(id json.RawMessage, code int, msg string) error {
	var idv any = id
	if id == nil {
		idv = nil
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": idv, "error": map[string]any{"code": code, "message": msg}})
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}
