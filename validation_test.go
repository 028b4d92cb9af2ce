package mnemo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

// TestEngine_InvalidTextRefused checks that text that is not valid UTF-8
// and ids a URL path segment cannot carry are refused with an ErrInvalid
// error naming the field, and that nothing is written then.
func TestEngine_InvalidTextRefused(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		in   mnemo.Input
		want string
	}{
		{"content", mnemo.Input{Content: "caf\xe9"}, "content is not valid UTF-8"},
		{"project", mnemo.Input{Content: "ok", Project: "p\xff"}, "project is not valid UTF-8"},
		{"session", mnemo.Input{Content: "ok", Session: "\xc3"}, "session is not valid UTF-8"},
		{"metadata", mnemo.Input{Content: "ok", Metadata: json.RawMessage("{\"note\":\"\xff\"}")}, "metadata is not valid UTF-8"},
		{"id dot dot", mnemo.Input{Content: "ok", ID: ".."}, ". and .."},
		{"id with a newline", mnemo.Input{Content: "ok", ID: "a\nb"}, "printable"},
		{"id too long", mnemo.Input{Content: "ok", ID: strings.Repeat("i", 257)}, "at most 256"},
		{"id not UTF-8", mnemo.Input{Content: "ok", ID: "\xff"}, "id is not valid UTF-8"},
	} {
		c.in.Profile = "me"
		if _, err := e.Remember(ctx, c.in); !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Remember = %v, want an ErrInvalid error with %q", c.name, err, c.want)
		}
	}
	if n, _ := e.Count(ctx, "me"); n != 0 {
		t.Fatalf("%d memories written by refused inputs", n)
	}

	m := remember(t, e, mnemo.Input{Profile: "me", Content: "a fine memory"})
	bad := "\xff"
	badMeta := json.RawMessage("{\"k\":\"\xff\"}")
	for _, c := range []struct {
		name  string
		patch mnemo.Patch
	}{
		{"content", mnemo.Patch{Content: &bad}},
		{"project", mnemo.Patch{Project: &bad}},
		{"session", mnemo.Patch{Session: &bad}},
		{"kind", mnemo.Patch{Kind: &bad}},
		{"metadata", mnemo.Patch{Metadata: &badMeta}},
	} {
		if _, err := e.Update(ctx, "me", m.ID, c.patch); !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), c.name+" is not valid UTF-8") {
			t.Errorf("Update %s: %v", c.name, err)
		}
	}
	if got, _ := e.Get(ctx, "me", m.ID); got.Content != m.Content || got.Project != "" || got.Session != "" {
		t.Errorf("a refused update changed the memory: %+v", got)
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = i
	}
	return m
}

func TestQuery_Validate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		q    mnemo.Query
		want string // "" means valid
	}{
		{"valid", mnemo.Query{Profile: "me", Text: "what did I deploy", Sessions: []string{"s1"}, Limit: 5}, ""},
		{"no profile", mnemo.Query{Text: "x"}, "profile is required"},
		{"empty text", mnemo.Query{Profile: "me", Text: " "}, "query is empty"},
		{"limit", mnemo.Query{Profile: "me", Text: "x", Limit: mnemo.MaxLimit + 1}, "limit"},
		{"text", mnemo.Query{Profile: "me", Text: "caf\xe9"}, "query is not valid UTF-8"},
		{"project", mnemo.Query{Profile: "me", Text: "x", Project: "\xff"}, "project is not valid UTF-8"},
		{"session", mnemo.Query{Profile: "me", Text: "x", Sessions: []string{"ok", "\xff"}}, "sessions[1] is not valid UTF-8"},
		{"exclude", mnemo.Query{Profile: "me", Text: "x", Exclude: []string{"\xff"}}, "exclude[0] is not valid UTF-8"},
		{"kind", mnemo.Query{Profile: "me", Text: "x", Kinds: []mnemo.Kind{"dream"}}, "kinds[0]"},
		{"override", mnemo.Query{Profile: "me", Text: "x", Overrides: map[string]string{"strategy": "\xff"}}, "strategy is not valid UTF-8"},
		{"metadata", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"speaker": "Caroline", "n": 2, "f": 2.5, "ok": true, "gone": nil}}, ""},
		{"metadata object", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"who": map[string]any{"a": 1}}}, "metadata.who: must be a string, a number, true, false or null (equality with a JSON scalar), not an object"},
		{"metadata array", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"tags": []any{"a"}}}, "not an array"},
		{"metadata empty key", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"": "v"}}, "metadata: a key is empty"},
		{"metadata NaN", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"n": math.NaN()}}, "metadata.n is not a finite number"},
		{"metadata key", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"\xff": "v"}}, "metadata: a key is not valid UTF-8"},
		{"metadata value", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"k": "\xff"}}, "metadata.k is not valid UTF-8"},
		{"metadata long key", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{strings.Repeat("k", 257): "v"}}, "a key is 257 bytes"},
		{"metadata keys", mnemo.Query{Profile: "me", Text: "x", Metadata: manyKeys(33)}, "metadata has 33 keys: at most 32 allowed"},
		{"metadata 32 keys", mnemo.Query{Profile: "me", Text: "x", Metadata: manyKeys(32)}, ""},
		{"metadata long value", mnemo.Query{Profile: "me", Text: "x", Metadata: map[string]any{"k": strings.Repeat("v", 4097)}}, "metadata.k is 4097 bytes"},
	} {
		err := c.q.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an ErrInvalid error with %q", c.name, err, c.want)
		}
	}
}

// TestEngine_ProfileNameIsExact: every Engine method that takes a profile
// refuses a name that is not exactly one (surrounding spaces, control or
// format characters) with an ErrInvalid error naming the profile, and
// writes nothing: a name is never trimmed into another tenant's.
func TestEngine_ProfileNameIsExact(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	m, err := e.Remember(ctx, mnemo.Input{Profile: "bob", Session: "s1", Content: "bob's walrus note"})
	if err != nil {
		t.Fatal(err)
	}
	one := 0.9
	for _, name := range []string{"bob ", " bob", "bob\n", "bob\u200b", "\u00a0bob"} {
		for _, c := range []struct {
			op   string
			call func() error
		}{
			{"Remember", func() error { _, err := e.Remember(ctx, mnemo.Input{Profile: name, Content: "planted"}); return err }},
			{"Recall", func() error { _, err := e.Recall(ctx, mnemo.Query{Profile: name, Text: "walrus"}); return err }},
			{"Get", func() error { _, err := e.Get(ctx, name, m.ID); return err }},
			{"List", func() error { _, err := e.List(ctx, mnemo.ListQuery{Profile: name}); return err }},
			{"Update", func() error { _, err := e.Update(ctx, name, m.ID, mnemo.Patch{Importance: &one}); return err }},
			{"Forget", func() error { return e.Forget(ctx, name, m.ID) }},
			{"ForgetMatching", func() error {
				_, err := e.ForgetMatching(ctx, mnemo.ForgetQuery{Profile: name, Session: "s1"})
				return err
			}},
			{"DeleteProfile", func() error { _, err := e.DeleteProfile(ctx, name); return err }},
			{"Count", func() error { _, err := e.Count(ctx, name); return err }},
			{"Settings", func() error { _, err := e.Settings(ctx, name); return err }},
			{"UpdateSettings", func() error {
				_, err := e.UpdateSettings(ctx, name, map[string]string{"keyword_weight": "2"})
				return err
			}},
			{"ResetSettings", func() error { _, err := e.ResetSettings(ctx, name, []string{"keyword_weight"}); return err }},
			{"CreateKey", func() error { _, _, err := e.CreateKey(ctx, name, "k"); return err }},
			{"CreateServiceKey", func() error { _, _, err := e.CreateServiceKey(ctx, "k", []string{"alice", name}); return err }},
			{"Keys", func() error { _, err := e.Keys(ctx, name, true); return err }},
			{"EmbeddingCounts", func() error { _, err := e.EmbeddingCounts(ctx, name); return err }},
			{"Reembed", func() error { _, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: name}); return err }},
			{"VerifyIndex", func() error { _, err := e.VerifyIndex(ctx, name); return err }},
			{"RebuildIndex", func() error { _, err := e.RebuildIndex(ctx, name); return err }},
			{"BuildGraph", func() error { _, err := e.BuildGraph(ctx, name); return err }},
		} {
			if err := c.call(); !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "profile") {
				t.Errorf("%s(%q) = %v, want an ErrInvalid error naming the profile", c.op, name, err)
			}
		}
	}
	got, err := e.Get(ctx, "bob", m.ID)
	if err != nil || got.Importance != m.Importance {
		t.Errorf("bob's memory: %+v, %v; want it unchanged", got, err)
	}
	ps, err := e.Profiles(ctx)
	if err != nil || len(ps) != 1 || ps[0].Profile != "bob" || ps[0].Memories != 1 {
		t.Errorf("profiles = %+v, %v; want bob with his one memory", ps, err)
	}
	if ks, err := e.Keys(ctx, "", true); err != nil || len(ks) != 0 {
		t.Errorf("keys = %+v, %v; want none", ks, err)
	}
	if s, err := e.Settings(ctx, "bob"); err != nil || s.KeywordWeight != 1 {
		t.Errorf("bob's settings: %+v, %v", s, err)
	}
}
