package mnemo

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

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
	_, err := q.validate()
	return err
}

// validate is Validate, returning the metadata filter as matches.
func (q Query) validate() ([]mnemotype.MetadataMatch, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, mnemotype.Invalidf("query is empty")
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return nil, mnemotype.Invalidf("limit = %d: must be an integer in [1, %d]", q.Limit, MaxLimit)
	}
	if err := mnemotype.CheckText("query", q.Text); err != nil {
		return nil, err
	}
	return q.validateScope()
}

// validateScope checks the fields of q that scope it (every one but the
// text and the limit), as Validate does, and returns the metadata filter as
// matches.
func (q Query) validateScope() ([]mnemotype.MetadataMatch, error) {
	if err := mnemotype.CheckProfile(q.Profile); err != nil {
		return nil, err
	}
	check := []struct{ name, v string }{{"project", q.Project}}
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
			return nil, err
		}
	}
	for i, k := range q.Kinds {
		if _, err := mnemotype.ParseKind(string(k)); err != nil || k == "" {
			return nil, mnemotype.Invalidf("kinds[%d] = %q: must be one of episodic, semantic, identity", i, k)
		}
	}
	for _, l := range []struct {
		name string
		n    int
	}{{"exclude", len(q.Exclude)}, {"sessions", len(q.Sessions)}, {"kinds", len(q.Kinds)}, {"actors", len(q.Actors)}} {
		if l.n > MaxListItems {
			return nil, mnemotype.Invalidf("%s has %d items: at most %d allowed", l.name, l.n, MaxListItems)
		}
	}
	for i, a := range q.Actors {
		if err := mnemotype.CheckText(fmt.Sprintf("actors[%d]", i), a); err != nil {
			return nil, err
		}
		if len(a) > mnemotype.MaxActorBytes {
			return nil, mnemotype.Invalidf("actors[%d] is %d bytes: at most %d allowed", i, len(a), mnemotype.MaxActorBytes)
		}
	}
	md, err := mnemotype.MetadataFilter("metadata", q.Metadata)
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		name string
		t    time.Time
	}{{"after", q.After}, {"before", q.Before}} {
		if !b.t.IsZero() {
			if err := mnemotype.CheckTime(b.name, b.t); err != nil {
				return nil, err
			}
		}
	}
	if !q.After.IsZero() && !q.Before.IsZero() && !q.After.Before(q.Before) {
		return nil, mnemotype.Invalidf("after (%s) must be earlier than before (%s)", q.After.UTC().Format(time.RFC3339Nano), q.Before.UTC().Format(time.RFC3339Nano))
	}
	return md, nil
}
