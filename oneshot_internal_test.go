package mnemo

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// TestEngine_OneShotOnPostgres: a one-shot engine on Postgres with pgvector
// (no folder of snapshots) answers from the database alone, as a
// long-running one does: the lexical leg ranks in the store, and its
// catalog loads no index (the check that fails when a one-shot engine
// keeps snapshot text without snapshots: the trace reads the same).
func TestEngine_OneShotOnPostgres(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	dsn := c.DSN("postgres") + "&schema=oneshot"
	cfg := Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1}
	server, err := Open(dsn, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	if ps, ok := server.st.(*postgres.Store); !ok || ps.Dense() == nil {
		t.Skip("no pgvector: the catalog ranks the dense leg")
	}
	ctx := t.Context()
	words := strings.Fields("deploy auth token database staging cluster release payment service login session bug fix review")
	var ins []Input
	for i := range 200 {
		ins = append(ins, Input{Profile: "alice", Session: fmt.Sprintf("s%d", i%3),
			Content: fmt.Sprintf("%s %s %s note %d", words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)], i)})
	}
	if _, err := server.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	oneShotCfg := cfg
	oneShotCfg.ANN.OneShot = true
	oneShot, err := Open(dsn, &oneShotCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oneShot.Close() })
	all := map[string]string{"min_relevance": "0"}
	for _, q := range []Query{
		{Profile: "alice", Text: "staging cluster payment", Limit: 10, Timings: true, NoTouch: true, Overrides: all},
		{Profile: "alice", Text: "auth token review", Sessions: []string{"s1"}, Limit: 5, Timings: true, NoTouch: true, Overrides: all},
	} {
		got, err := oneShot.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trace.LexicalSearch != "the store's full-text index" {
			t.Errorf("%q: the one-shot engine ranked the lexical leg in %q", q.Text, got.Trace.LexicalSearch)
		}
		want, err := server.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) == 0 || len(got.Results) != len(want.Results) {
			t.Fatalf("%q: one-shot %d results, long-running %d", q.Text, len(got.Results), len(want.Results))
		}
		for i := range got.Results {
			if g, w := got.Results[i], want.Results[i]; g.ID != w.ID || math.Abs(g.Score-w.Score) > 1e-9 {
				t.Errorf("%q #%d: one-shot %s %v, long-running %s %v", q.Text, i+1, g.ID, g.Score, w.ID, w.Score)
			}
		}
	}
	if profiles, bytes, _ := oneShot.dense.Usage(); profiles != 0 || bytes != 0 {
		t.Errorf("the one-shot engine's catalog holds %d profiles, %d bytes", profiles, bytes)
	}
}
