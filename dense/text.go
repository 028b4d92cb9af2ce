package dense

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/textindex"
	"github.com/mnemo-dev/mnemo/vector"
)

// textDocs are the documents of a change set's upserts (read with Text):
// the fields the store's full-text index holds. A store whose texts do not
// match its upserts one for one is an error.
func textDocs(cs store.ChangeSet) ([]textindex.Doc, error) {
	if len(cs.Texts) != len(cs.Upserts) {
		return nil, fmt.Errorf("the change feed holds %d texts for %d memories (a store that does not honour ChangesParams.Text?)",
			len(cs.Texts), len(cs.Upserts))
	}
	docs := make([]textindex.Doc, len(cs.Upserts))
	for i := range cs.Upserts {
		m := &cs.Upserts[i]
		if cs.Texts[i].ID != m.ID {
			return nil, fmt.Errorf("the change feed's text %d is memory %q's, not %q's", i, cs.Texts[i].ID, m.ID)
		}
		docs[i] = textindex.Doc{Order: cs.Texts[i].Order,
			Fields: [textindex.NumFields]string{m.Content, m.Actor, textindex.TimeWords(m.OccurredAt), cs.Texts[i].Context}}
	}
	return docs, nil
}

// Lexical answers a lexical search as the store's Lexical does — the same
// memories, order and scores, every match of an OR query scored — from
// the profile's full-text index in process (Options.Text), caught up with
// the store first. ok is false when the catalog cannot answer, and the
// caller asks the store: the catalog keeps no text (Options.Text, or
// SnapshotText and a snapshot with text), a term is a phrase (several
// tokens), the weights are not valid (the store says why).
func (c *Catalog) Lexical(ctx context.Context, p store.LexicalParams) (hits []mnemotype.Hit, ok bool, err error) {
	x, q, ok, err := c.textQuery(ctx, p)
	if !ok || err != nil || x == nil {
		return nil, ok, err
	}
	if p.MinHits > 0 && p.Only == nil { // as the stores: MinHits does not apply to listed ids
		n, ok := x.CountText(q, p.MinHits)
		if !ok {
			return nil, false, nil
		}
		if n < p.MinHits {
			return nil, true, nil
		}
	}
	hits, ok = x.SearchText(q)
	if !ok {
		return nil, false, nil
	}
	return hits, true, nil
}

// LexicalEither answers the lexical leg's AND query and its OR fallback at
// once: for p (an AND query, p.Match.All, with p.MinHits and no p.Only),
// Lexical's answer when the AND query matches at least p.MinHits memories
// (all true), else Lexical's answer to the same query with OR and without
// MinHits; where the full-text index can, it reads the postings once for
// both. ok as for Lexical, and false for a p it does not apply to.
func (c *Catalog) LexicalEither(ctx context.Context, p store.LexicalParams) (hits []mnemotype.Hit, all, ok bool, err error) {
	if !p.Match.All || p.MinHits <= 0 || p.Only != nil {
		return nil, false, false, nil
	}
	x, q, ok, err := c.textQuery(ctx, p)
	if !ok || err != nil || x == nil {
		return nil, false, ok, err
	}
	hits, all, ok = x.SearchTextEither(q, p.MinHits)
	if !ok {
		return nil, false, false, nil
	}
	return hits, all, true, nil
}

// textQuery returns the index and the query of p (x nil when nothing
// matches: no token, or no listed id); ok as for Lexical.
func (c *Catalog) textQuery(ctx context.Context, p store.LexicalParams) (x *vector.Index, q vector.TextQuery, ok bool, err error) {
	if !c.opt.Text && !c.opt.SnapshotText {
		return nil, q, false, nil
	}
	w := p.Fields
	if w.IsZero() {
		w.Content = 1
	}
	weights := [textindex.NumFields]float64{w.Content, w.Actor, w.Time, w.Context}
	if !slices.ContainsFunc(weights[:], func(v float64) bool { return v > 0 }) ||
		slices.ContainsFunc(weights[:], func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }) {
		return nil, q, false, nil
	}
	var toks []string
	seen := map[string]bool{}
	for _, term := range p.Match.Terms {
		if seen[term] {
			continue // a repeat: the store searches a term once
		}
		seen[term] = true
		tok, single := textindex.Token(term)
		if !single {
			if len(ftstoken.Tokens(term)) == 0 {
				continue // no token: the store drops the term
			}
			return nil, q, false, nil
		}
		toks = append(toks, tok)
	}
	if len(toks) == 0 || (p.Only != nil && len(p.Only) == 0) {
		return nil, q, true, nil
	}
	x, err = c.index(ctx, p.Scope.Profile)
	if err != nil || !x.HasText() {
		return nil, q, false, err
	}
	f := vector.FilterOf(p.Scope)
	f.Only = p.Only
	if len(p.Scope.Metadata) > 0 {
		if p.Only == nil {
			// Every memory of the scope would have to be listed: the
			// store checks the filter on its matches instead.
			return nil, q, false, nil
		}
		// The metadata filter, which the index cannot evaluate, resolved
		// by the store for the listed ids.
		in, err := c.st.InScope(ctx, p.Scope, p.Only)
		if err != nil {
			return nil, q, false, err
		}
		if f.Only = in; f.Only == nil {
			f.Only = []string{}
		}
	}
	q = vector.TextQuery{Query: textindex.Query{Tokens: toks, All: p.Match.All, Weights: weights, K: p.Limit}, Filter: f}
	return x, q, true, nil
}

// Neighbors answers store.Store's Neighbors — the turns around each of
// ids in its session, in scope — from the profile's index, caught up with
// the store first, when the catalog keeps text (Options.Text, or
// SnapshotText and a snapshot with text: it answers the recall's reads in
// process). ok is false when it cannot, and the caller asks the store: no
// text kept, a metadata filter, a session longer than
// vector.MaxNearSession.
func (c *Catalog) Neighbors(ctx context.Context, sc mnemotype.Scope, ids []string, radius int) (out []store.Neighbor, ok bool, err error) {
	if (!c.opt.Text && !c.opt.SnapshotText) || len(sc.Metadata) > 0 {
		return nil, false, nil
	}
	if len(ids) == 0 || radius <= 0 {
		return nil, true, nil
	}
	x, err := c.index(ctx, sc.Profile)
	if err != nil || !x.KeepsText() {
		return nil, false, err
	}
	rows, ok := x.Near(vector.FilterOf(sc), ids, radius)
	if !ok {
		return nil, false, nil
	}
	ns := make([]store.NeighborRow, len(rows))
	for i, r := range rows {
		ns[i] = store.NeighborRow{ID: r.ID, Of: r.Of, Abs: r.Abs, Seq: r.Seq}
	}
	return store.SortNeighbors(ns), true, nil
}

// Signals answers store.Store's Signals for the signals an index holds —
// when each memory occurred and its importance, not its access statistics
// (left zero) — from the profile's index caught up with the store, when
// the catalog keeps text (as for Neighbors: it answers the recall's reads
// in process); ok is false otherwise.
func (c *Catalog) Signals(ctx context.Context, profile string, ids []string) (out map[string]store.Signals, ok bool, err error) {
	if !c.opt.Text && !c.opt.SnapshotText {
		return nil, false, nil
	}
	x, err := c.index(ctx, profile)
	if err != nil || !x.KeepsText() {
		return nil, false, err
	}
	out = make(map[string]store.Signals, len(ids))
	x.Signals(ids, func(id string, s vector.Signal) {
		out[id] = store.Signals{OccurredAt: s.Occurred, Importance: s.Importance}
	})
	return out, true, nil
}

// Count answers store.Store's Count — how many memories profile holds —
// from its index caught up with the store (it holds every memory of the
// profile, embedded or not).
func (c *Catalog) Count(ctx context.Context, profile string) (int, error) {
	x, err := c.index(ctx, profile)
	if err != nil {
		return 0, err
	}
	return x.Len(), nil
}

// Holds reports, for each of ids, which of tokens (ftstoken's, as the
// full-text index holds them) its memory's content or actor holds:
// held[i][j] for ids[i] and tokens[j], all false for a memory not in
// profile. It reads profile's full-text index caught up with the store,
// not the texts; ok is false when the catalog keeps no complete full-text
// index of profile.
func (c *Catalog) Holds(ctx context.Context, profile string, ids, tokens []string) (held [][]bool, ok bool, err error) {
	if !c.opt.Text && !c.opt.SnapshotText {
		return nil, false, nil
	}
	x, err := c.index(ctx, profile)
	if err != nil || !x.HasText() {
		return nil, false, err
	}
	held, ok = x.HoldsText(ids, tokens, 1<<textindex.Content|1<<textindex.Actor)
	return held, ok, nil
}
