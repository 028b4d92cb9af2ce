package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

// exportFixture is a profile's worth of memories using every field.
var exportFixture = []string{
	`{"id":"t1","text":"Did you go to the support group?","session":"c1","speaker":"Caroline","seq":1,"timestamp":"2023-05-08T13:56:00.123456789Z","project":"locomo","importance":0.8}`,
	`{"id":"t2","text":"Yes — last Tuesday!","session":"c1","speaker":"Melanie","seq":2,"timestamp":"2023-05-08T13:57:00Z","metadata":{"dia_id":"D1:2","tags":["a","b"]}}`,
	`{"id":"t3","text":"a fact about walruses","kind":"semantic","created_at":"2024-01-02T03:04:05Z","occurred_at":"1999-12-31T23:59:59Z"}`,
	`{"id":"t4","text":"who I am","kind":"identity","extra_field":42}`,
	`{"id":"t5","text":"no session, no actor","created_at":"0001-01-01T00:00:01Z"}`,
}

// TestCLI_ExportImportRoundTrip: mnemo export writes every memory of a
// profile (every field, access statistics, and the embeddings with
// --embeddings) as lines mnemo import reads back as they were: exporting
// the imported copy gives the same bytes.
func TestCLI_ExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("import", writeLines(t, exportFixture), "--profile", "me")
	c.ok("add", "--profile", "other", "another tenant's memory")
	c.ok("recall", "--profile", "me", "support group walruses") // access statistics
	for _, withEmb := range []bool{false, true} {
		args := []string{"export", "--profile", "me"}
		if withEmb {
			args = append(args, "--embeddings")
		}
		code, first, errs := c.run("", args...)
		if code != 0 || !strings.Contains(errs, "exported 5 memories") {
			t.Fatalf("export: exit %d, %s", code, errs)
		}
		lines := strings.Split(strings.TrimSpace(first), "\n")
		if len(lines) != 5 {
			t.Fatalf("export wrote %d lines, want 5:\n%s", len(lines), first)
		}
		var m struct {
			Embedding   []float32 `json:"embedding"`
			AccessCount int64     `json:"access_count"`
		}
		sawAccess := false
		for _, l := range lines {
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if withEmb != (len(m.Embedding) > 0) {
				t.Errorf("--embeddings %v: line %s", withEmb, l)
			}
			sawAccess = sawAccess || m.AccessCount > 0
		}
		if !sawAccess {
			t.Error("no exported memory carries the recall's access statistics")
		}
		path := filepath.Join(t.TempDir(), "export.jsonl")
		if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
			t.Fatal(err)
		}
		copyCLI := newCLI(t)
		copyCLI.ok("import", path)
		if second := copyCLI.ok(args...); second != first {
			t.Errorf("--embeddings %v: the imported copy exports differently:\nfirst  %s\nsecond %s", withEmb, first, second)
		}
	}
}

// TestCLI_List: pages in creation order with a cursor, filters, plain and
// JSON output; the other profile's memories never appear.
func TestCLI_List(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("import", writeLines(t, exportFixture), "--profile", "me")
	c.ok("add", "--profile", "other", "another tenant's memory")
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("more pages than memories")
		}
		var page struct {
			Memories   []mnemo.Memory `json:"memories"`
			NextCursor string         `json:"next_cursor"`
		}
		args := []string{"list", "--profile", "me", "--limit", "2", "--json"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		if err := json.Unmarshal([]byte(c.ok(args...)), &page); err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Memories {
			ids = append(ids, m.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"t5", "t1", "t2"}; len(ids) != 5 || !slices.Equal(ids[:3], want) {
		t.Errorf("listed %v, want 5 memories starting %v (creation order)", ids, want)
	}
	out := c.ok("list", "--profile", "me", "--session", "c1")
	if !strings.Contains(out, "t1") || !strings.Contains(out, "c1 Caroline: Did you go") || strings.Contains(out, "t3") {
		t.Errorf("list --session c1:\n%s", out)
	}
	if out := c.ok("list", "--profile", "me", "--limit", "1"); !strings.Contains(out, "next page: --cursor ") {
		t.Errorf("list --limit 1 names no next page:\n%s", out)
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--cursor", "garbage"}, {"extra"}} {
		if code, _, errs := c.run("", append([]string{"list", "--profile", "me"}, bad...)...); code != 2 {
			t.Errorf("list %v: exit %d, %s", bad, code, errs)
		}
	}
}

// TestCLI_Update: the flags given change, the others stay; nothing to
// change, a bad value or an unknown id writes nothing.
func TestCLI_Update(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("import", writeLines(t, exportFixture), "--profile", "me")
	var m mnemo.Memory
	if err := json.Unmarshal([]byte(c.ok("update", "--profile", "me", "t2", "--actor", "Mel", "--importance", "0.9", "--metadata", `{"k":1}`)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Actor != "Mel" || m.Importance != 0.9 || !jsonEqual(m.Metadata, `{"k":1}`) || m.Content != "Yes — last Tuesday!" || m.Session != "c1" || m.Seq != 2 {
		t.Errorf("after update: %+v", m)
	}
	code, out, errs := c.run("a new question\n", "update", "--profile", "me", "t1", "--content", "-", "--session", "c2")
	if code != 0 {
		t.Fatalf("update --content -: exit %d, %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m.Content != "a new question\n" || m.Session != "c2" || m.Seq != 1 || m.Actor != "Caroline" {
		t.Errorf("after update --content - --session c2: %+v", m)
	}
	before := c.ok("get", "--profile", "me", "t3")
	for _, bad := range [][]string{
		{"t3"},                          // nothing to change
		{"t3", "--importance", "2"},     // out of range
		{"t3", "--occurred-at", "soon"}, // not a time
		{"t3", "--seq", "x"},            // not a number
		{"t3", "--kind", "dream"},       // unknown kind
	} {
		if code, _, errs := c.run("", append([]string{"update", "--profile", "me"}, bad...)...); code != 2 {
			t.Errorf("update %v: exit %d, %s", bad, code, errs)
		}
	}
	if code, _, errs := c.run("", "update", "--profile", "me", "nope", "--actor", "x"); code == 0 || !strings.Contains(errs, "not found") {
		t.Errorf("update of an unknown id: exit %d, %s", code, errs)
	}
	if after := c.ok("get", "--profile", "me", "t3"); after != before {
		t.Errorf("a refused update changed t3:\n%s\n%s", before, after)
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

func TestCLI_Version(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := c.ok("version")
	if !strings.HasPrefix(out, "mnemo ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %q", out)
	}
	if got := c.ok("--version"); got != out {
		t.Errorf("--version: %q, want %q", got, out)
	}
}

// TestCLI_DeleteBySessionAndProfile: delete --session / --project remove
// those memories and say how many; --all removes the profile with its
// settings and keys; misuse exits 2 having deleted nothing.
func TestCLI_DeleteBySessionAndProfile(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("import", writeLines(t, exportFixture), "--profile", "me")
	c.ok("add", "--profile", "other", "--session", "c1", "another tenant's memory")
	for _, bad := range [][]string{{}, {"--all", "t1"}, {"--all", "--session", "c1"}, {"--session", "c1", "t1"}} {
		if code, _, errs := c.run("", append([]string{"delete", "--profile", "me"}, bad...)...); code != 2 {
			t.Errorf("delete %v: exit %d, %s", bad, code, errs)
		}
	}
	if n := count(t, c, "me"); n != 5 {
		t.Fatalf("misuse deleted memories: %d left", n)
	}
	if out := c.ok("delete", "--profile", "me", "--session", "c1"); out != "deleted 2 memories\n" {
		t.Errorf("delete --session c1: %q", out)
	}
	if out := c.ok("delete", "--profile", "me", "--project", "nowhere"); out != "deleted 0 memories\n" {
		t.Errorf("delete --project nowhere: %q", out)
	}
	if n := count(t, c, "other"); n != 1 {
		t.Errorf("the other profile's session c1: %d memories, want 1", n)
	}
	c.ok("keys", "create", "--profile", "me")
	c.ok("settings", "set", "--profile", "me", "semantic_weight=0.7")
	if out := c.ok("delete", "--profile", "me", "--all"); out != "deleted profile me: 3 memories, 1 settings, 1 API keys revoked\n" {
		t.Errorf("delete --all: %q", out)
	}
	if n := count(t, c, "me"); n != 0 {
		t.Errorf("after delete --all: %d memories", n)
	}
	if out := c.ok("keys", "list", "--profile", "me", "--all"); strings.Contains(out, "key_") {
		t.Errorf("keys after delete --all:\n%s", out)
	}
}

// TestCLI_ReadCommandsNeverCreateADatabase: a command that only reads or
// changes what is stored, given a path where there is no database, exits 4
// naming the path and creates neither the file nor its directory; the
// recollect hook writes an empty recollection instead.
func TestCLI_ReadCommandsNeverCreateADatabase(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	missing := filepath.Join(t.TempDir(), "typo", "mnemo.db")
	for _, args := range [][]string{
		{"recall", "--profile", "me", "walrus"},
		{"get", "--profile", "me", "t1"},
		{"list", "--profile", "me"},
		{"export", "--profile", "me"},
		{"update", "--profile", "me", "t1", "--actor", "x"},
		{"delete", "--profile", "me", "t1"},
		{"delete", "--profile", "me", "--session", "s1"},
		{"delete", "--profile", "me", "--all"},
		{"settings", "get", "--profile", "me"},
		{"settings", "reset", "--profile", "me", "semantic_weight"},
		{"keys", "list"},
		{"keys", "revoke", "key_x"},
		{"bench", "--profile", "me", "--n", "1"},
		{"reembed", "--profile", "me"},
	} {
		code, _, errs := c.run("", append(args, "--db", missing)...)
		if code != exitNotFound || !strings.Contains(errs, "no database at "+missing) {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
	out := filepath.Join(t.TempDir(), "recollection.md")
	if code, _, errs := c.run("", "recollect", "--profile", "me", "--db", missing, "--out", out, "walrus"); code != 0 || !strings.Contains(errs, "no database") {
		t.Errorf("recollect: exit %d, %s", code, errs)
	}
	if b, err := os.ReadFile(out); err != nil || len(b) != 0 {
		t.Errorf("recollect wrote %q, %v; want an empty file", b, err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("a read command created %s: %v", filepath.Dir(missing), err)
	}
}

// TestCLI_SettingsSetAndReset: changing the defaults of every profile takes
// --all-profiles; reset brings a setting back to the server-wide value,
// then to the default; an unknown name or a reset leaving every weight 0
// exits 2 and changes nothing.
func TestCLI_SettingsSetAndReset(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	get := func(args ...string) string {
		t.Helper()
		for _, l := range strings.Split(c.ok(append([]string{"settings", "get"}, args...)...), "\n") {
			if v, ok := strings.CutPrefix(l, "semantic_weight="); ok {
				return v
			}
		}
		t.Fatal("no semantic_weight line")
		return ""
	}
	if code, _, errs := c.run("", "settings", "set", "semantic_weight=0.9"); code != 2 || !strings.Contains(errs, "--all-profiles") {
		t.Errorf("set without --profile: exit %d, %s", code, errs)
	}
	def := mnemo.DefaultSettings().SemanticWeight
	c.ok("settings", "set", "--all-profiles", "semantic_weight=0.9")
	c.ok("settings", "set", "--profile", "me", "semantic_weight=0.7")
	if v := get("--profile", "me"); v != "0.7" {
		t.Errorf("me's semantic_weight = %s, want 0.7", v)
	}
	c.ok("settings", "reset", "--profile", "me", "semanticweight") // names are case-insensitive, as in set
	if v := get("--profile", "me"); v != "0.9" {
		t.Errorf("after reset: %s, want the server-wide 0.9", v)
	}
	c.ok("settings", "reset", "--all-profiles", "semantic_weight")
	if v := get("--profile", "me"); v != strconv.FormatFloat(def, 'g', -1, 64) {
		t.Errorf("after both resets: %s, want the default %v", v, def)
	}
	c.ok("settings", "set", "--all-profiles", "keyword_weight=0")
	c.ok("settings", "set", "--profile", "me", "keyword_weight=1", "semantic_weight=0")
	for _, bad := range [][]string{
		{"--profile", "me", "colour"},
		{"--profile", "me"},
		{"--profile", "me", "keyword_weight"}, // every weight 0 once the server-wide 0 applies
		{"--profile", "me", "--all-profiles", "rrf_k"},
	} {
		if code, _, errs := c.run("", append([]string{"settings", "reset"}, bad...)...); code != 2 {
			t.Errorf("reset %v: exit %d, %s", bad, code, errs)
		}
	}
	if v := get("--profile", "me"); v != "0" {
		t.Errorf("a refused reset changed semantic_weight to %s", v)
	}
}

// TestCLI_RecallNamesCloseProfiles: a recall in a profile that holds no
// memories says so on stderr, with the database's path and its profiles,
// closest name first; a recall that finds nothing relevant in a profile
// that has memories says that the floor dropped them, and how to see them.
func TestCLI_RecallNamesCloseProfiles(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, p := range []string{"alice", "bob", "alicia", "zed"} {
		c.ok("add", "--profile", p, "a walrus")
	}
	code, out, errs := c.run("", "recall", "--profile", "alcie", "walrus")
	if code != 0 || !strings.Contains(out, "no memories found") ||
		!strings.Contains(errs, `profile "alcie" holds no memories in `+c.env["MNEMO_DB"]+"; profiles there, closest first: alice (1), alicia (1)") {
		t.Errorf("recall in a mistyped profile: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := c.run("", "recall", "--profile", "alice", "zzzz"); code != 0 ||
		!strings.Contains(errs, "nothing relevant enough: 1 result(s) below the minimum relevance 0.2") || strings.Contains(errs, "closest") {
		t.Errorf("recall matching nothing in alice: exit %d, stderr %q", code, errs)
	}
	if out := c.ok("recall", "--profile", "alice", "--min-relevance", "0", "zzzz"); !strings.Contains(out, "walrus") {
		t.Errorf("recall with --min-relevance 0: %s", out)
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"alice", "alice", 0}, {"alcie", "alice", 2}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"é", "e", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCLI_Filters: list, export and recall take --actor, --after,
// --before and --meta KEY=VALUE filters; a malformed --meta is a usage
// error.
func TestCLI_Filters(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("import", writeLines(t, []string{
		`{"id":"c1","text":"walrus at the zoo","speaker":"Caroline","timestamp":"2023-05-08T10:00:00Z","metadata":{"mood":"happy","n":2}}`,
		`{"id":"c2","text":"walrus painting","speaker":"Caroline","timestamp":"2023-06-08T10:00:00Z","metadata":{"mood":"sad","n":"2"}}`,
		`{"id":"m1","text":"walrus facts","speaker":"Melanie","timestamp":"2023-05-09T10:00:00Z","metadata":{"mood":"happy"}}`,
		`{"id":"n1","text":"walrus without metadata","timestamp":"2023-05-10T10:00:00Z"}`,
	}), "--profile", "me")
	listIDs := func(args ...string) []string {
		t.Helper()
		var page struct{ Memories []mnemo.Memory }
		if err := json.Unmarshal([]byte(c.ok(append([]string{"list", "--profile", "me", "--json"}, args...)...)), &page); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Memories {
			ids = append(ids, m.ID)
		}
		return slices.Sorted(slices.Values(ids))
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--meta", "mood=happy"}, []string{"c1", "m1"}},
		{[]string{"--meta", "mood=happy", "--actor", "Caroline"}, []string{"c1"}},
		{[]string{"--meta", "n=2"}, []string{"c1"}},
		{[]string{"--meta", `n="2"`}, []string{"c2"}},
		{[]string{"--meta", "mood=null"}, []string{"n1"}},
		{[]string{"--actor", "Melanie,Caroline", "--before", "2023-06-01"}, []string{"c1", "m1"}},
		{[]string{"--after", "2023-05-09T10:00:00Z"}, []string{"c2", "m1", "n1"}},
	} {
		if got := listIDs(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("list %v = %v, want %v", tc.args, got, tc.want)
		}
	}
	if out := c.ok("export", "--profile", "me", "--meta", "mood=sad"); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"id":"c2"`) {
		t.Errorf("export --meta mood=sad:\n%s", out)
	}
	var rec struct{ Results []struct{ ID string } }
	if err := json.Unmarshal([]byte(c.ok("recall", "--profile", "me", "--json", "--min-relevance", "0", "--meta", "mood=happy", "walrus")), &rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rec.Results {
		got = append(got, r.ID)
	}
	if slices.Sort(got); !slices.Equal(got, []string{"c1", "m1"}) {
		t.Errorf("recall --meta mood=happy = %v, want [c1 m1]", got)
	}
	for _, args := range [][]string{
		{"list", "--profile", "me", "--meta", "mood"},
		{"list", "--profile", "me", "--meta", "=x"},
		{"recall", "--profile", "me", "--meta", "n=1", "--meta", "n=2", "walrus"},
		{"delete", "--profile", "me", "--meta", "mood=happy", "c1"},
	} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
	if out := c.ok("delete", "--profile", "me", "--meta", "mood=happy", "--actor", "Melanie"); !strings.Contains(out, "deleted 1 memories") {
		t.Errorf("delete --meta mood=happy --actor Melanie: %s", out)
	}
	if got := listIDs(); !slices.Equal(got, []string{"c1", "c2", "n1"}) {
		t.Errorf("after the delete: %v", got)
	}
}

// TestCLI_SettingsOldSpelling: a camelCase setting name still works, with
// a note on stderr naming the new spelling.
func TestCLI_SettingsOldSpelling(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	code, _, errs := c.run("", "settings", "set", "--profile", "me", "semanticWeight=0.7", "rrf_k=20")
	if code != 0 || !strings.Contains(errs, "semanticWeight is now spelled semantic_weight") || strings.Contains(errs, "rrf_k is now") {
		t.Errorf("set semanticWeight: exit %d, stderr %q", code, errs)
	}
	if out := c.ok("settings", "get", "--profile", "me"); !strings.Contains(out, "semantic_weight=0.7\n") || !strings.Contains(out, "rrf_k=20\n") {
		t.Errorf("settings get:\n%s", out)
	}
	if code, _, errs := c.run("", "settings", "reset", "--profile", "me", "semanticWeight"); code != 0 || !strings.Contains(errs, "now spelled semantic_weight") {
		t.Errorf("reset semanticWeight: exit %d, stderr %q", code, errs)
	}
}
