// Package jsonutf8 locates invalid UTF-8 in a JSON document. encoding/json
// silently replaces invalid bytes in strings with U+FFFD; callers that must
// refuse such input check the raw bytes first and name the field at fault
// with FirstInvalid. FieldOfString names the field holding a value that a
// decoder refused without saying where.
package jsonutf8

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// FirstInvalid returns the byte offset of the first invalid UTF-8 sequence
// in doc (len(doc) if there is none) and the path of the JSON key or
// string value holding it: "memories[1].content" or "metadata.note" for a
// value, "a key of metadata" for a key, "the document" for a top-level
// string, "" when the offset is in no key or string or doc is not JSON up
// to there.
func FirstInvalid(doc []byte) (field string, offset int) {
	offset = len(doc)
	for i := 0; i < len(doc); {
		r, n := utf8.DecodeRune(doc[i:])
		if r == utf8.RuneError && n == 1 {
			offset = i
			break
		}
		i += n
	}
	if offset == len(doc) {
		return "", offset
	}
	return fieldAt(doc, int64(offset)), offset
}

// frame is one open object or array while walking a document.
type frame struct {
	obj     bool
	key     string // the current key, in an object
	idx     int    // the current index, in an array
	wantKey bool   // the object's next token is a key or its end
}

// fieldAt returns the path of the key or string value of doc spanning byte
// offset off, or "" if off is in no such token.
func fieldAt(doc []byte, off int64) string {
	return walk(doc, func(path func() string, tok json.Token, end int64, key bool) (string, bool) {
		if end <= off {
			return "", false
		}
		if key {
			// The decoded key has lost its invalid bytes: the caller
			// names the object holding it.
			return "a key of " + path(), true
		}
		if _, isString := tok.(string); isString {
			return path(), true
		}
		return "", false
	})
}

// FieldOfString returns the path ("memories[1].occurred_at") of the first
// string value of doc equal to value, or "" if there is none: how a caller
// names the field whose value a decoder refused without saying where
// (encoding/json returns a json.Unmarshaler's error without its field).
func FieldOfString(doc []byte, value string) string {
	return walk(doc, func(path func() string, tok json.Token, _ int64, key bool) (string, bool) {
		if s, ok := tok.(string); ok && !key && s == value {
			return path(), true
		}
		return "", false
	})
}

// ValueAt returns the path of the scalar value of doc (string, number,
// boolean or null) whose token ends at byte offset end, as
// json.UnmarshalTypeError.Offset reports it, or "" if none does.
func ValueAt(doc []byte, end int64) string {
	return walk(doc, func(path func() string, _ json.Token, e int64, key bool) (string, bool) {
		if e != end || key {
			return "", e >= end
		}
		return path(), true
	})
}

// walk calls visit with every scalar token and key of doc, in order, with
// the path of the value it belongs to (for a key, of the object holding
// it) and the offset where the token ends, until visit reports done; it
// returns what visit returned then, or "" when doc ends or stops being
// JSON first.
func walk(doc []byte, visit func(path func() string, tok json.Token, end int64, key bool) (string, bool)) string {
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.obj {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.idx)
			}
		}
		if b.Len() == 0 {
			return "the document"
		}
		return b.String()
	}
	// closed ends the innermost container; its parent object then waits
	// for its next key.
	closed := func() {
		stack = stack[:len(stack)-1]
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		end := dec.InputOffset() // the token spans the bytes before end
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			closed()
			continue
		}
		if top != nil && top.obj && top.wantKey {
			stack = stack[:len(stack)-1]
			out, done := visit(path, tok, end, true)
			stack = append(stack, *top)
			if done {
				return out
			}
			stack[len(stack)-1].key, stack[len(stack)-1].wantKey = fmt.Sprint(tok), false
			continue
		}
		if top != nil && !top.obj {
			top.idx++
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			stack = append(stack, frame{obj: true, wantKey: true})
		case '[':
			stack = append(stack, frame{idx: -1})
		default:
			if out, done := visit(path, tok, end, false); done {
				return out
			}
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	}
}
