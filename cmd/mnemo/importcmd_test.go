package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
)

// writeLines writes lines to a file in a fresh directory.
func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// count returns the number of memories of profile.
func count(t *testing.T, c *cli, profile string) int {
	t.Helper()
	e, err := openKeys(&app{getenv: func(k string) string { return c.env[k] }, stderr: os.Stderr}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.Count(t.Context(), profile)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestImport_OversizedLineIsOneBadLine checks that a line over the limit
// (2 MiB among 1,500 good lines) is rejected with its number while every
// other line is stored (exit 3), that --strict then writes nothing (exit
// 2), and that a line as long as the longest escaping of the largest
// content is accepted.
func TestImport_OversizedLineIsOneBadLine(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	lines := make([]string, 0, 1501)
	for i := range 1500 {
		if i == 700 {
			lines = append(lines, `{"text":"`+strings.Repeat("x", 2<<20)+`"}`)
		}
		lines = append(lines, fmt.Sprintf(`{"text":"good line %d"}`, i))
	}
	file := writeLines(t, lines)

	code, _, errs := c.run("", "import", file, "--profile", "strict", "--strict")
	if code != 2 || !strings.Contains(errs, fmt.Sprintf("line 701: longer than %d bytes", maxImportLine)) ||
		!strings.Contains(errs, "nothing was written") {
		t.Errorf("--strict: exit %d: %s", code, errs)
	}
	if n := count(t, c, "strict"); n != 0 {
		t.Errorf("--strict wrote %d memories", n)
	}

	code, out, errs := c.run("", "import", file, "--profile", "me")
	if code != exitSomeRejected || !strings.Contains(errs, fmt.Sprintf("line 701: rejected: longer than %d bytes", maxImportLine)) {
		t.Errorf("import: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "imported 1500 memories, 0 already stored, 1 lines rejected (lines 701)") {
		t.Errorf("summary: %q", out)
	}
	if n := count(t, c, "me"); n != 1500 {
		t.Errorf("%d memories stored, want 1500", n)
	}

	// The largest content, escaped as Go's encoder escapes "<", fits.
	big, err := json.Marshal(map[string]string{"text": strings.Repeat("<", mnemo.MaxContentBytes)})
	if err != nil {
		t.Fatal(err)
	}
	if len(big) < 6*mnemo.MaxContentBytes {
		t.Fatalf("the escaped line is %d bytes", len(big))
	}
	if code, out, errs := c.run("", "import", writeLines(t, []string{string(big)}), "--profile", "big"); code != 0 ||
		!strings.Contains(out, "imported 1 memories") {
		t.Errorf("largest escaped content: exit %d: %s %s", code, out, errs)
	}
}

// TestImport_RerunStoresOnlyWhatIsMissing checks that lines without ids
// get the same ids on every run (identical lines apart), so a run after a
// crash stores only the lines missing and a third run stores nothing.
func TestImport_RerunStoresOnlyWhatIsMissing(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"text":"line %d"}`, i%20)) // lines 20-29 repeat lines 0-9
	}
	lines = append(lines, `{"id":"explicit","text":"with an id"}`)
	// The run that crashed stored the first 12 lines.
	if code, _, errs := c.run("", "import", writeLines(t, lines[:12]), "--profile", "me"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	file := writeLines(t, lines)
	code, out, errs := c.run("", "import", file, "--profile", "me")
	if code != 0 || !strings.Contains(out, "imported 19 memories, 12 already stored, 0 lines rejected") {
		t.Errorf("second run: exit %d: %q %s", code, out, errs)
	}
	code, out, errs = c.run("", "import", file, "--profile", "me")
	if code != 0 || !strings.Contains(out, "imported 0 memories, 31 already stored, 0 lines rejected") {
		t.Errorf("third run: exit %d: %q %s", code, out, errs)
	}
	if n := count(t, c, "me"); n != 31 {
		t.Errorf("%d memories stored, want 31 (identical lines are distinct memories)", n)
	}
	// The same lines in another profile are other memories.
	if code, out, _ := c.run("", "import", file, "--profile", "other", "--strict"); code != 0 || !strings.Contains(out, "imported 31 memories") {
		t.Errorf("another profile: exit %d: %q", code, out)
	}
	if code, out, _ := c.run("", "import", file, "--profile", "other", "--strict"); code != 0 || !strings.Contains(out, "imported 0 memories, 31 already stored") {
		t.Errorf("--strict again: exit %d: %q", code, out)
	}
}

// TestImport_BadIDsAndTimestamps checks that invalid ids, non-finite or
// out-of-range timestamps and invalid UTF-8 are rejected with the line
// number and the field's name.
func TestImport_BadIDsAndTimestamps(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	lines := []string{
		`{"id":"ok-1","text":"a good line","created_at":"2023-05-08T13:56:00Z"}`,
		`{"id":"rtl\u202eid","text":"a format character"}`,
		`{"id":"..","text":"dot dot"}`,
		`{"id":"` + strings.Repeat("i", 300) + `","text":"long id"}`,
		`{"id":"tab\tid","text":"control character"}`,
		`{"text":"NaN time","timestamp":"NaN"}`,
		`{"text":"infinite time","created_at":"Infinity"}`,
		`{"text":"huge time","timestamp":1e300}`,
		`{"text":"year 0","created_at":"0000-06-01T00:00:00Z"}`,
		`{"text":"past year 9999","created_at":"9999-12-31T23:00:00-05:00"}`,
		"{\"text\":\"caf\xe9\"}",
		`{"text":"a good line too","timestamp":1683554160}`,
	}
	code, out, errs := c.run("", "import", writeLines(t, lines), "--profile", "me")
	if code != exitSomeRejected || !strings.Contains(out, "imported 2 memories, 0 already stored, 10 lines rejected (lines 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)") {
		t.Errorf("exit %d, summary %q: %s", code, out, errs)
	}
	for _, want := range []string{
		`line 2: rejected: field id "rtl\u202eid": must be printable`,
		`line 3: rejected: field id "..": . and .. cannot be ids`,
		`line 4: rejected: field id is 300 bytes: at most 256 allowed`,
		`line 5: rejected: field id "tab\tid": must be printable`,
		`line 6: rejected: field timestamp = NaN: Unix seconds must be a finite number`,
		`line 7: rejected: field created_at = Infinity: Unix seconds must be a finite number`,
		`line 8: rejected: field timestamp = 1e300: Unix seconds must be a finite number`,
		`line 9: rejected: field created_at = 0000-06-01T00:00:00Z: must be a time in years 0001-9999`,
		`line 10: rejected: field created_at = 10000-01-01T04:00:00Z: must be a time in years 0001-9999`,
		`line 11: rejected: field text is not valid UTF-8`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestImport_ExitCodes checks 0 (every line stored), 2 (every line bad:
// nothing written) and 2 for a usage error.
func TestImport_ExitCodes(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if code, _, errs := c.run("", "import", writeLines(t, []string{`{"text":"fine"}`}), "--profile", "me"); code != 0 {
		t.Errorf("all stored: exit %d: %s", code, errs)
	}
	code, _, errs := c.run("", "import", writeLines(t, []string{`nope`, `{"text":""}`}), "--profile", "me")
	if code != 2 || !strings.Contains(errs, "every line was rejected") {
		t.Errorf("every line bad: exit %d: %s", code, errs)
	}
	if code, _, _ := c.run("", "import"); code != 2 {
		t.Errorf("no file: exit %d", code)
	}
	if code, _, errs := c.run("", "import", "-h"); code != 0 || !strings.Contains(errs, "Exit codes") {
		t.Errorf("import -h: exit %d: %s", code, errs)
	}
}

// TestImport_MapsConversationFields: the common names of who said it, when
// it happened and its turn become actor, occurred_at and seq (the first of
// each list present wins; the others stay in metadata); bad values are
// rejected naming the field.
func TestImport_MapsConversationFields(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	lines := []string{
		`{"id":"a","text":"first","session":"s1","speaker":"Caroline","role":"user","timestamp":"2023-05-08T13:56:00","dia_id":"D1:1"}`,
		`{"id":"b","text":"second","session":"s1","role":"assistant","occurred_at":"2023-05-09T10:00:00Z","created_at":"2024-01-01T00:00:00Z"}`,
		`{"id":"c","text":"third","session":"s1","name":"Bob","date":"2023-05-10","turn":7}`,
		`{"id":"d","text":"fourth","session":"s1","actor":"Dana","speaker":"ignored","seq":9}`,
		`{"id":"e","text":"bad turn","seq":-2}`,
		`{"id":"f","text":"bad time","occurred_at":"0000-01-01T00:00:00Z"}`,
	}
	code, out, errs := c.run("", "import", writeLines(t, lines), "--profile", "me")
	if code != exitSomeRejected || !strings.Contains(out, "imported 4 memories") {
		t.Fatalf("exit %d, %q: %s", code, out, errs)
	}
	for _, want := range []string{"line 5: rejected: field seq", "line 6: rejected: field occurred_at"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	get := func(id string) mnemo.Memory {
		var m mnemo.Memory
		if err := json.Unmarshal([]byte(c.ok("get", "--profile", "me", id)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	day := func(d, h int) time.Time { return time.Date(2023, 5, d, h, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		id, actor         string
		occurred, created time.Time
		seq               int64
		meta, metaAbsent  string
	}{
		{"a", "Caroline", day(8, 13).Add(56 * time.Minute), day(8, 13).Add(56 * time.Minute), 1, `"role":"user"`, "speaker"},
		{"b", "assistant", day(9, 10), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), 2, "", "role"},
		{"c", "Bob", day(10, 0), day(10, 0), 7, "", "name"},
		{"d", "Dana", time.Time{}, time.Time{}, 9, `"speaker":"ignored"`, "actor"},
	} {
		m := get(tc.id)
		if m.Actor != tc.actor || m.Seq != tc.seq || (!tc.occurred.IsZero() && (!m.OccurredAt.Equal(tc.occurred) || !m.CreatedAt.Equal(tc.created))) {
			t.Errorf("%s: actor %q seq %d occurred %v created %v; want %q %d %v %v", tc.id, m.Actor, m.Seq, m.OccurredAt, m.CreatedAt, tc.actor, tc.seq, tc.occurred, tc.created)
		}
		if meta := compact(m.Metadata); (tc.meta != "" && !strings.Contains(meta, tc.meta)) || strings.Contains(meta, `"`+tc.metaAbsent+`"`) {
			t.Errorf("%s: metadata %s; want %s kept and %s taken", tc.id, meta, tc.meta, tc.metaAbsent)
		}
	}
}

// TestImport_BatchesStoredInOrder checks that batches, each prepared while
// the one before is stored, are stored in file order: the turns of a
// session spanning 3.5 batches are numbered as the lines come, a line the
// engine rejects (content too long) in the third batch is the only one
// left out, and a second run stores nothing.
func TestImport_BatchesStoredInOrder(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const n = 3*importBatch + importBatch/2
	bad := 2*importBatch + 17 // 0-based
	lines := make([]string, 0, n)
	for i := range n {
		text := fmt.Sprintf("turn %d", i)
		if i == bad {
			text = strings.Repeat("x", mnemo.MaxContentBytes+1)
		}
		lines = append(lines, fmt.Sprintf(`{"text":%q,"session":"s","created_at":"2024-01-01T00:00:00Z"}`, text))
	}
	file := writeLines(t, lines)
	code, out, errs := c.run("", "import", file, "--profile", "me")
	want := fmt.Sprintf("imported %d memories, 0 already stored, 1 lines rejected (lines %d)", n-1, bad+1)
	if code != exitSomeRejected || !strings.Contains(out, want) || !strings.Contains(errs, fmt.Sprintf("line %d: rejected:", bad+1)) {
		t.Fatalf("import: exit %d: %q, want %q; %s", code, out, want, errs)
	}
	e, err := openKeys(&app{getenv: func(k string) string { return c.env[k] }, stderr: os.Stderr}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seqs := map[string]int64{}
	for cursor := ""; ; {
		page, err := e.List(t.Context(), mnemo.ListQuery{Profile: "me", Limit: mnemo.MaxListLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Memories {
			seqs[m.Content] = m.Seq
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	want64 := int64(0)
	for i := range n {
		if i == bad {
			continue
		}
		want64++
		if got, ok := seqs[fmt.Sprintf("turn %d", i)]; !ok || got != want64 {
			t.Fatalf("line %d stored as turn %d (found %v), want turn %d", i+1, got, ok, want64)
		}
	}
	e.Close()
	code, out, errs = c.run("", "import", file, "--profile", "me")
	want = fmt.Sprintf("imported 0 memories, %d already stored, 1 lines rejected", n-1)
	if code != exitSomeRejected || !strings.Contains(out, want) {
		t.Errorf("second run: exit %d: %q, want %q; %s", code, out, want, errs)
	}
}

// TestImport_ProfileFlag: --profile imports every line into its profile,
// a line naming another one too (and the summary says how many did); without
// it each line goes into its own profile, $MNEMO_PROFILE only filling in for
// lines that name none. A profile that is not a string, or not a valid name,
// rejects its line naming the field.
func TestImport_ProfileFlag(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, s := range []string{"one", "two", "three"} {
		c.ok("add", "--profile", "a", "--session", "s1", "memory "+s+" of a")
	}
	export := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(export, []byte(c.ok("export", "--profile", "a")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := c.run("", "import", export, "--profile", "b")
	if code != 0 || !strings.Contains(out, `imported 3 memories, 0 already stored, 0 lines rejected; 3 lines naming another profile went into "b" (--profile)`) {
		t.Fatalf("import a's export --profile b: exit %d: %q %s", code, out, errs)
	}
	if a, b := count(t, c, "a"), count(t, c, "b"); a != 3 || b != 3 {
		t.Errorf("a holds %d, b %d: want 3 each", a, b)
	}
	// Without the flag, the lines' own profile; $MNEMO_PROFILE does not
	// override it.
	c.env["MNEMO_PROFILE"] = "c"
	mixed := writeLines(t, []string{`{"content": "a line of a", "profile": "a"}`, `{"content": "a line of no profile"}`})
	if code, out, errs := c.run("", "import", mixed); code != 0 || !strings.Contains(out, "imported 2 memories, 0 already stored, 0 lines rejected") ||
		strings.Contains(out, "another profile") {
		t.Errorf("import with MNEMO_PROFILE: exit %d: %q %s", code, out, errs)
	}
	if a, cc := count(t, c, "a"), count(t, c, "c"); a != 4 || cc != 1 {
		t.Errorf("a holds %d, c %d: want 4 and 1", a, cc)
	}
	delete(c.env, "MNEMO_PROFILE")
	bad := writeLines(t, []string{`{"content": "x", "profile": 5}`, `{"content": "y", "profile": "a "}`,
		`{"content": "z", "profile": ["a"]}`, `{"content": "w", "profile": "a\u0000"}`, `{"content": "kept", "profile": "d"}`})
	code, out, errs = c.run("", "import", bad)
	if code != exitSomeRejected || !strings.Contains(out, "imported 1 memories, 0 already stored, 4 lines rejected (lines 1, 2, 3, 4)") {
		t.Errorf("bad profiles: exit %d: %q %s", code, out, errs)
	}
	for _, want := range []string{"line 1: rejected: field profile: must be a string", `line 2: rejected: profile "a " begins or ends with a space`,
		"line 3: rejected: field profile: must be a string", `line 4: rejected: profile "a\x00": must be printable`} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if a := count(t, c, "a"); a != 4 {
		t.Errorf("a holds %d after the bad lines, want 4", a)
	}
}

// TestImport_EmbeddingOfAnotherModel: a line's embedding labelled with
// another model than the engine's, or of zeros only (no direction), is left
// out and the memory embedded by the engine, and the summary says how many.
func TestImport_EmbeddingOfAnotherModel(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	vec := "[" + strings.TrimSuffix(strings.Repeat("0.5,", 256), ",") + "]"
	zero := "[" + strings.TrimSuffix(strings.Repeat("0,", 256), ",") + "]"
	file := writeLines(t, []string{
		`{"id": "other", "content": "embedded by another model", "embedding_model": "text-embedding-3-small", "embedding": ` + vec + `}`,
		`{"id": "zero", "content": "an all-zero vector", "embedding": ` + zero + `}`,
		`{"id": "own", "content": "embedded by this model", "embedding_model": "hash", "embedding": ` + vec + `}`,
	})
	code, out, errs := c.run("", "import", file, "--profile", "me")
	if code != 0 || !strings.Contains(out, "imported 3 memories, 0 already stored, 0 lines rejected; "+
		"2 embeddings of another model than hash, or of zeros only, were left out and the memories embedded again") {
		t.Fatalf("exit %d: %q %s", code, out, errs)
	}
	dec := json.NewDecoder(strings.NewReader(c.ok("export", "--profile", "me", "--embeddings")))
	for dec.More() {
		var m struct {
			ID             string
			EmbeddingModel string    `json:"embedding_model"`
			Embedding      []float32 `json:"embedding"`
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		given := m.ID == "own" // the line's own vector, of this model, is kept
		if m.EmbeddingModel != "hash" || len(m.Embedding) != 256 || (m.Embedding[0] == 0.5) != given || allZero(m.Embedding) {
			t.Errorf("%s stored with %q, %d dimensions, first %v", m.ID, m.EmbeddingModel, len(m.Embedding), m.Embedding[:min(1, len(m.Embedding))])
		}
	}
}
