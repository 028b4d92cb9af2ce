package mnemo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Validate checks q's own fields, without reading any settings: the
// profile and text are required, the limit in [0, MaxLimit] (0 means
// DefaultLimit), kinds known, and every text field (text, profile, project,
// sessions, kinds, exclude, overrides) valid UTF-8. It returns an ErrInvalid
// error naming the first offending field. Servers and the CLI call it
// before Recall so that a query is never answered for text whose invalid
// bytes were silently replaced.
func (q Query) Validate() error {
	if strings.TrimSpace(q.Profile) == "" {
		return mnemotype.Invalidf("profile is required")
	}
	if strings.TrimSpace(q.Text) == "" {
		return mnemotype.Invalidf("query is empty")
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return mnemotype.Invalidf("limit = %d: must be an integer in [1, %d]", q.Limit, MaxLimit)
	}
	check := []struct{ name, v string }{{"query", q.Text}, {"profile", q.Profile}, {"project", q.Project}}
	for i, s := range q.Sessions {
		check = append(check, struct{ name, v string }{fmt.Sprintf("sessions[%d]", i), s})
	}
	for i, s := range q.Exclude {
		check = append(check, struct{ name, v string }{fmt.Sprintf("exclude[%d]", i), s})
	}
	for i, k := range q.Kinds {
		check = append(check, struct{ name, v string }{fmt.Sprintf("kinds[%d]", i), string(k)})
	}
	for _, k := range slices.Sorted(maps.Keys(q.Overrides)) {
		v := q.Overrides[k]
		check = append(check, struct{ name, v string }{"settings key", k}, struct{ name, v string }{k, v})
	}
	for _, c := range check {
		if err := mnemotype.CheckText(c.name, c.v); err != nil {
			return err
		}
	}
	for i, k := range q.Kinds {
		if _, err := mnemotype.ParseKind(string(k)); err != nil || k == "" {
			return mnemotype.Invalidf("kinds[%d] = %q: must be one of episodic, semantic, identity", i, k)
		}
	}
	return nil
}
