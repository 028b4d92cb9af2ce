package fusion

import (
	"reflect"
	"testing"
)

func TestDetectIntent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		want  Intent
	}{
		{"what is JWT", IntentDefinition},
		{"What does RRF stand for?", IntentDefinition},
		{"define reciprocal rank fusion", IntentDefinition},
		{"meaning of recollection", IntentDefinition},
		{"how many memories did I store last week", IntentMeasurement},
		{"What is the size of the index?", IntentMeasurement},
		{"how long did the migration take", IntentMeasurement},
		{"how do I deploy Threadline", IntentProcedure},
		{"how did I handle authentication?", IntentProcedure},
		{"steps to rotate the signing key", IntentProcedure},
		{"best way to set up the hook", IntentProcedure},
		{`find "auth bug"`, IntentEntity},
		{"Threadline auth bug", IntentEntity},
		{"error in auth_token refresh", IntentEntity},
		{"notes about v2.3", IntentEntity},
		{"the getUser handler", IntentEntity},
		{"the JWT fix", IntentEntity},
		{"ISSUE-42 regression", IntentEntity},
		{"changes to main.go", IntentEntity},
		{"thoughts on memory consolidation", IntentExploratory},
		{"Find the auth bug", IntentExploratory},
		{"e.g. something about i.e. logging", IntentExploratory},
		{"", IntentExploratory},
		{"   ", IntentExploratory},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			if got := DetectIntent(tt.query); got != tt.want {
				t.Errorf("DetectIntent(%q) = %s, want %s", tt.query, got, tt.want)
			}
		})
	}
}

func TestIntentWeights_Table(t *testing.T) {
	t.Parallel()
	want := map[Intent][2]float64{
		IntentDefinition:  {0.5, 0.5},
		IntentMeasurement: {0.5, 0.5},
		IntentProcedure:   {0.5, 0.5},
		IntentEntity:      {0.7, 0.3},
		IntentExploratory: {0.7, 0.3},
	}
	for in, w := range want {
		if d, l := IntentWeights(in); d != w[0] || l != w[1] {
			t.Errorf("IntentWeights(%s) = %v, %v; want %v", in, d, l, w)
		}
	}
}

func TestExactTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		want  []string
	}{
		{`why did "JWT auth fix" break v2.3 and main.go`, []string{"JWT auth fix", "v2.3", "main.go"}},
		{"“Threadline” and `make test` on #123 by @alice", []string{"Threadline", "make test", "#123", "@alice"}},
		{"V2.3 or v2.3 again", []string{"V2.3"}},
		{"how did I handle authentication?", nil},
		{`unclosed "quote v2`, []string{"v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			if got := ExactTerms(tt.query); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ExactTerms(%q) = %q, want %q", tt.query, got, tt.want)
			}
		})
	}
}

func TestContainsTerm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, term string
		want       bool
	}{
		{"deployed v2.3 today", "v2.3", true},
		{"deployed v2.30 today", "v2.3", false},
		{"the jwt auth fix.", "jwt auth fix", true},
		{"xjwt auth fix", "jwt auth fix", false},
		{"v2.3", "v2.3", true},
		{"", "a", false},
		{"abc", "", false},
		{"é café", "café", true},
	}
	for _, tt := range tests {
		if got := containsTerm(tt.text, tt.term); got != tt.want {
			t.Errorf("containsTerm(%q, %q) = %v, want %v", tt.text, tt.term, got, tt.want)
		}
	}
}
