package jsonutf8

import (
	"strings"
	"testing"
)

func TestFirstInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc, field string
		offset           int
	}{
		{"valid", `{"a":"é"}`, "", 10},
		{"top-level value", "{\"content\":\"caf\xe9\"}", "content", 15},
		{"key", "{\"ok\":1,\"k\xff\":2}", "a key of the document", 10},
		{"nested key", "{\"metadata\":{\"\xff\":2}}", "a key of metadata", 14},
		{"nested object", "{\"a\":{\"b\":1,\"c\":\"\xff\"}}", "a.c", 17},
		{"array element", "{\"memories\":[{\"content\":\"x\"},{\"content\":\"y\xc3\"}]}", "memories[1].content", 42},
		{"after nested containers", "{\"a\":[[1],{\"x\":[]}],\"b\":\"\xff\"}", "b", 25},
		{"array of strings", "{\"sessions\":[\"s1\",\"s\xff\"]}", "sessions[1]", 20},
		{"top-level string", "\"\xff\"", "the document", 1},
		{"not JSON", "\xff{}", "", 0},
		{"outside strings", "{\"a\":1\xff}", "", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			field, off := FirstInvalid([]byte(c.doc))
			if field != c.field || off != c.offset {
				t.Errorf("FirstInvalid(%q) = %q, %d; want %q, %d", c.doc, field, off, c.field, c.offset)
			}
		})
	}
}

func TestFieldOfString(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"when": 3, "memories": [{"content": "yesterday"}, {"occurred_at": "yesterday", "tags": ["a", "yesterday"]}], "yesterday": "x"}`)
	for _, c := range []struct{ value, want string }{
		{"yesterday", "memories[0].content"},
		{"x", "yesterday"},
		{"a", "memories[1].tags[0]"},
		{"when", ""},
		{"3", ""},
		{"absent", ""},
	} {
		if got := FieldOfString(doc, c.value); got != c.want {
			t.Errorf("FieldOfString(%q) = %q, want %q", c.value, got, c.want)
		}
	}
	if got := FieldOfString([]byte(`{"a": [{"b": "v"}], "c": {"d": "w"}}`), "w"); got != "c.d" {
		t.Errorf("after a closed array: %q, want c.d", got)
	}
	if got := FieldOfString([]byte(`{"a": "v"`), "v"); got != "a" {
		t.Errorf("in a truncated document: %q, want a", got)
	}
}

func TestValueAt(t *testing.T) {
	t.Parallel()
	doc := `{"a": 5, "memories": [{"importance": "high"}, {"importance": true}], "n": null}`
	for _, c := range []struct{ after, want string }{
		{`5`, "a"},
		{`"high"`, "memories[0].importance"},
		{`true`, "memories[1].importance"},
		{`null`, "n"},
		{`"a"`, ""}, // a key
		{`[`, ""},
	} {
		end := int64(strings.Index(doc, c.after) + len(c.after))
		if got := ValueAt([]byte(doc), end); got != c.want {
			t.Errorf("ValueAt(after %s) = %q, want %q", c.after, got, c.want)
		}
	}
}
