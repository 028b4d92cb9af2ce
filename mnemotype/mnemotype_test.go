package mnemotype

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCheckID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, id, want string // want "" means valid
	}{
		{"uuid", "0190f2a4-7b1c-7def-8000-000000000001", ""},
		{"words and punctuation", "conv-26 D1:3 #note?", ""},
		{"non-ASCII letters", "mémoire-東京", ""},
		{"at the limit", strings.Repeat("a", MaxIDBytes), ""},
		{"empty", "", "id is empty"},
		{"too long", strings.Repeat("a", MaxIDBytes+1), "at most 256"},
		{"dot", ".", ". and .."},
		{"dot dot", "..", ". and .."},
		{"slash", "conv-26/D1:3", ""},
		{"invalid UTF-8", "a\xffb", "not valid UTF-8"},
		{"newline", "a\nb", "printable"},
		{"NUL", "a\x00b", "printable"},
		{"DEL", "a\x7fb", "printable"},
		{"C1 control", "a\u0085b", "printable"},
		{"zero-width space", "a\u200bb", "printable"},
		{"line separator", "a\u2028b", "printable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := CheckID("id", c.id)
			if c.want == "" {
				if err != nil {
					t.Fatalf("CheckID(%q) = %v, want nil", c.id, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "id") {
				t.Fatalf("CheckID(%q) = %v, want an ErrInvalid error with %q", c.id, err, c.want)
			}
		})
	}
}

func TestMemory_Validate(t *testing.T) {
	t.Parallel()
	valid := func() Memory {
		return Memory{ID: "m1", Profile: "p", Content: "text", Kind: KindEpisodic, Project: "x", Session: "s",
			Importance: 0.5, Metadata: []byte(`{"k":"v"}`)}
	}
	for _, c := range []struct {
		name   string
		change func(*Memory)
		want   string // "" means valid
	}{
		{"valid", func(*Memory) {}, ""},
		{"id with a slash", func(m *Memory) { m.ID = "conv-26/D1:3" }, ""},
		{"id dot dot", func(m *Memory) { m.ID = ".." }, "id"},
		{"actor too long", func(m *Memory) { m.Actor = strings.Repeat("x", 257) }, "actor is 257 bytes"},
		{"occurred in year 0", func(m *Memory) { m.OccurredAt = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) }, "occurred_at"},
		{"negative seq", func(m *Memory) { m.Seq = -1 }, "seq"},
		{"id too long", func(m *Memory) { m.ID = strings.Repeat("x", 300) }, "id is 300 bytes"},
		{"content not UTF-8", func(m *Memory) { m.Content = "caf\xe9" }, "content is not valid UTF-8"},
		{"project not UTF-8", func(m *Memory) { m.Project = "\xff" }, "project is not valid UTF-8"},
		{"session not UTF-8", func(m *Memory) { m.Session = "\xc3" }, "session is not valid UTF-8"},
		{"kind not UTF-8", func(m *Memory) { m.Kind = "\xff" }, "kind is not valid UTF-8"},
		{"profile not UTF-8", func(m *Memory) { m.Profile = "p\xff" }, "profile is not valid UTF-8"},
		{"metadata string not UTF-8", func(m *Memory) { m.Metadata = []byte("{\"k\":\"caf\xe9\"}") }, "metadata is not valid UTF-8"},
		{"metadata key not UTF-8", func(m *Memory) { m.Metadata = []byte("{\"\xff\":1}") }, "metadata is not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := valid()
			c.change(&m)
			err := m.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want an ErrInvalid error with %q", err, c.want)
			}
		})
	}
}

// FuzzMetadataFilter: a metadata filter value given as text always reads
// as a JSON scalar, a quoted string reads as what it quotes, other text as
// itself; MetadataFilter accepts it unless it breaks a stated limit, and
// never panics.
func FuzzMetadataFilter(f *testing.F) {
	for _, s := range []string{"Caroline", "2", `"2"`, "true", "null", "[1]", `{"a":1}`, "1e400", " 2 ", "", "\xff", `"\u00e9"`} {
		f.Add("k", s)
	}
	f.Fuzz(func(t *testing.T, key, text string) {
		v := ParseMetadataValue(text)
		switch x := v.(type) {
		case string:
			var quoted string
			if x != text && json.Unmarshal([]byte(text), &quoted) != nil {
				t.Fatalf("ParseMetadataValue(%q) = %q, neither the text nor what it quotes", text, x)
			}
		case float64, bool, nil:
		default:
			t.Fatalf("ParseMetadataValue(%q) = %T", text, v)
		}
		ms, err := MetadataFilter("metadata", map[string]any{key: v})
		valid := key != "" && len(key) <= MaxMetadataKeyBytes && utf8.ValidString(key)
		if s, ok := v.(string); ok {
			valid = valid && utf8.ValidString(s) && len(s) <= MaxMetadataValueBytes
		}
		if valid != (err == nil) {
			t.Fatalf("MetadataFilter(%q: %#v) error = %v, want valid = %v", key, v, err, valid)
		}
		if err == nil && (len(ms) != 1 || ms[0].Key != key) {
			t.Fatalf("MetadataFilter(%q: %#v) = %+v", key, v, ms)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("MetadataFilter error %v is not ErrInvalid", err)
		}
	})
}

func TestCompareHits(t *testing.T) {
	t.Parallel()
	hits := []Hit{{ID: "b", Score: 1}, {ID: "c", Score: 2}, {ID: "a", Score: 1}, {ID: "d", Score: -1}, {ID: "a2", Score: 2}}
	slices.SortFunc(hits, CompareHits)
	var got []string
	for _, h := range hits {
		got = append(got, h.ID)
	}
	if want := []string{"a2", "c", "a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("sorted by CompareHits: %v, want %v", got, want)
	}
	if c := CompareHits(Hit{ID: "x", Score: 1}, Hit{ID: "x", Score: 1}); c != 0 {
		t.Errorf("CompareHits of equal hits = %d", c)
	}
}

func TestCheckProfile(t *testing.T) {
	for _, c := range []struct {
		name, profile string
		ok            bool
	}{
		{"plain", "bob", true},
		{"inner space", "Jean Dupont", true},
		{"accents and symbols", "é/日本-😀_#?&", true},
		{"longest", strings.Repeat("p", MaxProfileBytes), true},
		{"empty", "", false},
		{"only a space", " ", false},
		{"trailing space", "bob ", false},
		{"leading space", " bob", false},
		{"tab", "bob\t", false},
		{"newline", "bo\nb", false},
		{"no-break space", "bob\u00a0", false},
		{"inner no-break space", "Jean\u00a0Dupont", false},
		{"line separator", "bob\u2028", false},
		{"zero-width space", "b\u200bob", false},
		{"byte order mark", "\ufeffbob", false},
		{"right-to-left override", "bob\u202e", false},
		{"NUL", "bo\x00b", false},
		{"DEL", "bob\x7f", false},
		{"invalid UTF-8", "bob\xff", false},
		{"too long", strings.Repeat("p", MaxProfileBytes+1), false},
	} {
		err := CheckProfile(c.profile)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: CheckProfile(%q) = %v, want nil", c.name, c.profile, err)
		case !c.ok && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "profile")):
			t.Errorf("%s: CheckProfile(%q) = %v, want an ErrInvalid error naming the profile", c.name, c.profile, err)
		}
	}
}
