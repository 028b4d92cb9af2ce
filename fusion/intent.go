package fusion

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Intent is what a query is after, as guessed by DetectIntent. It drives the
// query-adaptive weights (Params.AdaptiveWeights).
type Intent string

// Intents.
const (
	// IntentDefinition: "what is X", "define X", "what does X mean".
	IntentDefinition Intent = "definition"
	// IntentMeasurement: "how many", "how much", "how long", "what is the size of".
	IntentMeasurement Intent = "measurement"
	// IntentProcedure: "how do I", "how to", "steps to", "how did I handle".
	IntentProcedure Intent = "procedure"
	// IntentEntity is an entity lookup: the query names something exactly —
	// a quoted phrase, an identifier (v2.3, ISSUE-42, auth_token, getUser,
	// main.go, #123) or a capitalised name (Threadline, JWT).
	IntentEntity Intent = "entity_lookup"
	// IntentExploratory is everything else (open, conceptual questions).
	IntentExploratory Intent = "exploratory"
)

// IntentWeights returns the weight split between the dense (vector)
// and lexical (keyword) legs for an intent:
//
//	definition, measurement, procedure   dense 0.5  lexical 0.5
//	entity_lookup                        dense 0.7  lexical 0.3
//	exploratory (and unknown)            dense 0.7  lexical 0.3
//
// The two values sum to 1; Params.AdaptiveWeights applies them as shares of
// the pair's configured total weight.
func IntentWeights(in Intent) (dense, lexical float64) {
	switch in {
	case IntentDefinition, IntentMeasurement, IntentProcedure:
		return 0.5, 0.5
	default:
		return 0.7, 0.3
	}
}

// Phrase lists of the rule-based detector, matched against the lower-cased
// query with collapsed spaces.
var (
	measurementPrefixes = []string{
		"how many ", "how much ", "how long ", "how far ", "how big ", "how old ", "how often ",
		"how fast ", "how large ", "how small ", "how tall ", "how heavy ", "how deep ", "how wide ",
		"how high ", "how early ", "how late ", "what percentage", "what percent", "what fraction",
		"number of ", "amount of ", "count of ", "size of ", "total ",
	}
	// measurementNouns turn "what is the <noun> of" into a measurement.
	measurementNouns = []string{
		"size", "length", "weight", "cost", "price", "speed", "duration", "number", "count", "total",
		"percentage", "average", "latency", "distance", "height", "width", "depth", "rate", "amount",
		"age", "temperature", "capacity", "limit", "budget", "score",
	}
	definitionPrefixes = []string{
		"what is ", "what's ", "whats ", "what are ", "what is a ", "define ", "definition of ",
		"meaning of ", "what is meant by ", "explain what ", "describe what ",
	}
	procedurePrefixes = []string{
		"how do ", "how does ", "how did ", "how to ", "how can ", "how should ", "how would ",
		"how could ", "steps to ", "steps for ",
		"what are the steps", "what steps", "procedure for ", "process for ", "instructions for ",
		"guide to ", "best way to ", "the way to ", "walk me through ", "show me how ",
	}
	procedureInfixes = []string{
		" step by step", " step-by-step", " set up ", " install ", " configure ",
	}
	// leadingWords are sentence-initial words that are not names even when
	// capitalised.
	leadingWords = wordSet("what who whom whose when where why which how is are was were do does did " +
		"can could should would will shall may might must the a an i my me we our you your it its this that " +
		"these those there here find show tell list give get remember recall explain describe define any all " +
		"some please and or but if in on at for from to of by with about summarize search look check " +
		"note notes yesterday today last next after before since then also not no yes")
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// DetectIntent classifies query by rules (no model), checked in order:
//
//  1. measurement: a quantity question ("how many", "how long", "what is the
//     size of", …);
//  2. definition: "what is", "define", "meaning of", "what does X mean",
//     "X stand for";
//  3. procedure: "how do/did/to/can …", "steps to", "set up", "configure";
//  4. entity lookup: a quoted phrase, an identifier (a token mixing letters
//     and digits, or containing '_', '::', '/', '#123', '@name', internal
//     capitals as in getUser, dotted names as in main.go, dotted versions as
//     in 2.3.1) or a capitalised name (a word with two or more capitals
//     such as JWT, or a capitalised word other than "I" and common leading
//     words such as What, How, Find, Show — so "Threadline auth bug" is a
//     lookup but "Find the auth bug" is not);
//  5. exploratory otherwise (including the empty query).
//
// Question forms come first because they say what the user wants done with
// the entity they name ("how do I deploy Threadline" is a procedure).
func DetectIntent(query string) Intent {
	q := " " + strings.Join(strings.Fields(strings.ToLower(query)), " ") + " "
	q = strings.TrimLeft(q, " ¿¡\"'`“(")
	if strings.TrimSpace(q) == "" {
		return IntentExploratory
	}
	for _, p := range measurementPrefixes {
		if strings.HasPrefix(q, p) {
			return IntentMeasurement
		}
	}
	for _, lead := range []string{"what is the ", "what's the ", "what was the ", "what are the "} {
		if rest, ok := strings.CutPrefix(q, lead); ok {
			for _, n := range measurementNouns {
				if strings.HasPrefix(rest, n+" ") || strings.HasPrefix(rest, n+"?") {
					return IntentMeasurement
				}
			}
		}
	}
	if strings.HasPrefix(q, "what does ") || strings.HasPrefix(q, "what do ") {
		if strings.Contains(q, " mean") || strings.Contains(q, " stand for") {
			return IntentDefinition
		}
	}
	if strings.Contains(q, " stand for") || strings.Contains(q, " stands for") {
		return IntentDefinition
	}
	for _, p := range definitionPrefixes {
		if strings.HasPrefix(q, p) {
			return IntentDefinition
		}
	}
	for _, p := range procedurePrefixes {
		if strings.HasPrefix(q, p) {
			return IntentProcedure
		}
	}
	for _, p := range procedureInfixes {
		if strings.Contains(" "+q, p) {
			return IntentProcedure
		}
	}
	phrases, rest := quotedPhrases(query)
	if len(phrases) > 0 || len(identifiers(rest)) > 0 || hasName(rest) {
		return IntentEntity
	}
	return IntentExploratory
}

// ExactTerms returns the parts of query that a memory can contain verbatim:
// its quoted phrases ("…", “…” or `…`) and its identifiers (see
// DetectIntent), in order of appearance, without duplicates (compared
// case-insensitively). The exact-match bonus (Params.ExactMatchBonus) looks
// for them.
func ExactTerms(query string) []string {
	phrases, rest := quotedPhrases(query)
	seen := map[string]bool{}
	var out []string
	for _, t := range append(phrases, identifiers(rest)...) {
		k := strings.ToLower(t)
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}

// quotedPhrases extracts the non-empty phrases between matching quotes and
// returns the query with them replaced by spaces.
func quotedPhrases(query string) (phrases []string, rest string) {
	pairs := map[rune]rune{'"': '"', '“': '”', '`': '`', '„': '“'}
	var b strings.Builder
	rs := []rune(query)
	for i := 0; i < len(rs); i++ {
		closeQ, ok := pairs[rs[i]]
		if ok {
			j := i + 1
			for j < len(rs) && rs[j] != closeQ {
				j++
			}
			if j < len(rs) {
				if p := strings.TrimSpace(string(rs[i+1 : j])); p != "" {
					phrases = append(phrases, p)
				}
				b.WriteByte(' ')
				i = j
				continue
			}
		}
		b.WriteRune(rs[i])
	}
	return phrases, b.String()
}

// tokens splits s on white space and trims surrounding punctuation.
func tokens(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		t := strings.TrimFunc(f, func(r rune) bool {
			return strings.ContainsRune(".,;:!?()[]{}<>\"'`“”‘’„«»", r)
		})
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// identifiers returns the tokens of s that look like identifiers.
func identifiers(s string) []string {
	var out []string
	for _, t := range tokens(s) {
		if isIdentifier(t) {
			out = append(out, t)
		}
	}
	return out
}

func isIdentifier(t string) bool {
	var letters, digits, upperAfterLower int
	prevLower := false
	for _, r := range t {
		switch {
		case unicode.IsLetter(r):
			letters++
			if unicode.IsUpper(r) && prevLower {
				upperAfterLower++
			}
			prevLower = unicode.IsLower(r)
		case unicode.IsDigit(r):
			digits++
			prevLower = false
		default:
			prevLower = false
		}
	}
	switch {
	case letters > 0 && digits > 0: // v2, gpt4, ISSUE-42, 2FA
		return true
	case upperAfterLower > 0: // getUser, GitHub
		return true
	case strings.Contains(t, "_") && letters+digits > 1: // auth_token
		return true
	case strings.Contains(t, "::") || (strings.Contains(t, "/") && letters+digits > 1 && !strings.HasSuffix(t, "/")):
		return true // pkg::fn, path/to/file, owner/repo
	case (t[0] == '#' || t[0] == '@') && len(t) > 1: // #123, @alice
		return true
	}
	if digits > 0 && letters == 0 && strings.Count(t, ".") >= 2 { // 2.3.1
		return true
	}
	// Dotted names such as main.go or pkg.Func: every part ≥ 2 characters,
	// which keeps "e.g" and "U.S" out.
	if strings.Contains(t, ".") && letters > 0 {
		parts := strings.Split(t, ".")
		for _, p := range parts {
			if utf8.RuneCountInString(p) < 2 {
				return false
			}
		}
		return len(parts) > 1
	}
	return false
}

// hasName reports whether s holds a capitalised name: a word with two or
// more capitals (JWT, McKinsey) or a capitalised word that is not "I" or a
// common leading word (What, Find, The, …).
func hasName(s string) bool {
	for _, t := range tokens(s) {
		first, _ := utf8.DecodeRuneInString(t)
		if !unicode.IsUpper(first) {
			continue
		}
		uppers := 0
		for _, r := range t {
			if unicode.IsUpper(r) {
				uppers++
			}
		}
		if uppers >= 2 {
			return true
		}
		if t != "I" && !leadingWords[strings.ToLower(t)] {
			return true
		}
	}
	return false
}

// containsTerm reports whether lowerText contains lowerTerm starting and
// ending at word boundaries (the neighbouring characters, if any, are not
// letters, digits or '_'): "v2" matches "deployed v2." but not "v23".
func containsTerm(lowerText, lowerTerm string) bool {
	if lowerTerm == "" {
		return false
	}
	for off := 0; off <= len(lowerText)-len(lowerTerm); {
		i := strings.Index(lowerText[off:], lowerTerm)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(lowerTerm)
		before, _ := utf8.DecodeLastRuneInString(lowerText[:start])
		after, _ := utf8.DecodeRuneInString(lowerText[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(lowerText) || !isWordRune(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(lowerText[start:])
		off = start + size
	}
	return false
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
