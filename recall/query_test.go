package recall_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/recall"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	var many, first64 []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("w%03d", i))
	}
	first64 = many[:64]
	for _, tc := range []struct {
		name  string
		query string
		want  []string
	}{
		{"Empty", "", nil},
		{"Blank", " \t\n ", nil},
		{"Plain", "Deploy the API server", []string{"deploy", "api", "server"}},
		{"StopwordsDropped", "what is the capital of France", []string{"capital", "france"}},
		{"OnlyStopwordsKept", "to be or not to be", []string{"to", "be", "or", "not"}},
		{"OnlyStopwordsDeduped", "The THE the", []string{"the"}},
		{"Dedupe", "Go go GO golang go", []string{"go", "golang"}},
		{"DigitsAndMixed", "v2 release 2024 x86_64", []string{"v2", "release", "2024", "x86", "64"}},
		{"OperatorAND", "cats AND dogs", []string{"cats", "dogs"}},
		{"OperatorORNear", "OR NEAR(alpha beta)", []string{"near", "alpha", "beta"}},
		{"OperatorNOT", "cats NOT dogs", []string{"cats", "dogs"}},
		{"UnbalancedQuote", `"unbalanced quote`, []string{"unbalanced", "quote"}},
		{"DoubledQuotes", `say ""hello""`, []string{"say", "hello"}},
		{"Prefix", "foo* *", []string{"foo"}},
		{"Negation", "-x -", []string{"x"}},
		{"Column", "col:x", []string{"col", "x"}},
		{"Parens", ")(", nil},
		{"CaretAndPlus", "^start +plus", []string{"start", "plus"}},
		{"PunctuationOnly", `!!! ??? "" () * - : ^`, nil},
		{"Unicode", "Café Zürich 東京", []string{"café", "zürich", "東京"}},
		{"CombiningMark", "cafe\u0301 nai\u0308ve", []string{"cafe\u0301", "nai\u0308ve"}},
		{"UnicodeUpper", "ÉCOLE École", []string{"école"}},
		{"Apostrophe", "don't stop", []string{"don", "t", "stop"}},
		{"CapAt64", strings.Join(many, " "), first64},
		{"CapAfterDedupe", strings.Join(append(slices.Repeat([]string{"w000"}, 80), many...), " "), first64},
		{"CapAfterStopwords", "the " + strings.Join(many, " of "), first64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := recall.Terms(tc.query)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Terms(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}
