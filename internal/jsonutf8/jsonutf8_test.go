package jsonutf8

import "testing"

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
