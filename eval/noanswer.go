package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Categories of the no-answer queries.
const (
	// NoAnswerOther is a judged question asked in another scope than its
	// own (a question about one conversation asked of another agent's
	// memory): it names people and events the scope never saw.
	NoAnswerOther = "other-scope"
	// NoAnswerNonsense is a string of made-up words.
	NoAnswerNonsense = "nonsense"
)

// NoAnswerQueries returns n queries that have no relevant memory in the
// scope they are asked in (all the dataset offers when n is 0):
// a quarter nonsense (one to three pronounceable made-up words, more when
// the dataset has too few questions for the rest), the rest judged
// questions asked in another scope, chosen at random by seed among
// the questions of every category but adversarial ones (LoCoMo's, which ask
// about what did not happen, and may match anywhere). An unscoped dataset
// has no other scope, so its no-answer queries are all nonsense. Each
// query's Category is NoAnswerOther or NoAnswerNonsense, its Scope where
// it is asked, and it has no Relevant ids.
func NoAnswerQueries(ds *Dataset, n int, seed uint64) []Query {
	rng := rand.New(rand.NewPCG(seed, 0x6e6f2d616e73))
	var scopes []string
	for _, q := range ds.Judged() {
		if q.Scope != "" && !slices.Contains(scopes, q.Scope) {
			scopes = append(scopes, q.Scope)
		}
	}
	var other []Query
	if len(scopes) > 1 {
		for _, q := range ds.Judged() {
			if q.Category == "adversarial" {
				continue
			}
			i := slices.Index(scopes, q.Scope)
			to := scopes[(i+1+rng.IntN(len(scopes)-1))%len(scopes)]
			other = append(other, Query{ID: "no-answer/" + q.ID + "@" + to, Text: q.Text, Category: NoAnswerOther, Scope: to})
		}
		rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
	}
	nonsense := 100
	if n > 0 {
		// Made-up words make up what the other scopes cannot.
		other = other[:min(len(other), n-n/4)]
		nonsense = n - len(other)
	}
	out := other
	for i := range nonsense {
		scope := ""
		if len(scopes) > 0 {
			scope = scopes[i%len(scopes)]
		}
		out = append(out, Query{ID: fmt.Sprintf("no-answer/nonsense-%d", i), Text: madeUp(rng), Category: NoAnswerNonsense, Scope: scope})
	}
	return out
}

// madeUp returns one to three pronounceable made-up words ("blorif
// tazum").
func madeUp(rng *rand.Rand) string {
	const consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
	words := make([]string, 1+rng.IntN(3))
	for i := range words {
		var b strings.Builder
		for range 2 + rng.IntN(2) {
			b.WriteByte(consonants[rng.IntN(len(consonants))])
			b.WriteByte(vowels[rng.IntN(len(vowels))])
		}
		b.WriteByte(consonants[rng.IntN(len(consonants))])
		words[i] = b.String()
	}
	return strings.Join(words, " ")
}
