package fusion

import (
	"reflect"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

func TestDefaultBounds_MatchesEngine(t *testing.T) {
	t.Parallel()
	// prepare inlines DefaultBounds; keep the two in step.
	if got := DefaultBounds(); !reflect.DeepEqual(got, map[string]Range{mnemotype.LegDense: {Min: -1, Max: 1}}) {
		t.Fatalf("DefaultBounds() = %v: update prepare", got)
	}
}

func TestLegStats_Normalize(t *testing.T) {
	t.Parallel()
	st := legStats{n: 3, min: 2, max: 10}
	tests := []struct {
		name string
		st   legStats
		kind Normalization
		s    float64
		want float64
	}{
		{"minmax top", st, NormMinMax, 10, 1},
		{"minmax middle", st, NormMinMax, 6, 0.5},
		{"minmax bottom floors", st, NormMinMax, 2, NormFloor},
		{"minmax all equal", legStats{n: 2, min: 3, max: 3}, NormMinMax, 3, 1},
		{"none is raw", st, NormNone, -7.5, -7.5},
		{"tmm without bounds is minmax", st, NormTMM, 6, 0.5},
		{"tmm with bounds", legStats{min: 0.2, max: 0.4, bounds: Range{Min: -1, Max: 1}, hasBounds: true}, NormTMM, 0.5, 0.75},
		{"tmm clips above", legStats{bounds: Range{Min: 0, Max: 1}, hasBounds: true}, NormTMM, 3, 1},
		{"tmm lower bound", legStats{bounds: Range{Min: -1, Max: 1}, hasBounds: true, lower: 0, hasLower: true}, NormTMM, 0.5, 0.5},
		{"minmax lower bound", legStats{min: 0.10, max: 0.12, lower: 0, hasLower: true}, NormMinMax, 0.10, 0.10 / 0.12},
		{"zscore no spread", legStats{n: 1, min: 4, max: 4, scale: 4}, NormZScore, 4, 1},
		{"zscore mean is one half", legStats{n: 3, min: 2, max: 10, scale: 10, mean: 0.6, sd: 0.32659863}, NormZScore, 6, 0.5},
		{"dbsf mean is one half", legStats{n: 3, min: 2, max: 10, scale: 10, mean: 0.6, sd: 0.32659863}, NormDBSF, 6, 0.5},
		{"dbsf top", legStats{n: 3, min: 2, max: 10, scale: 10, mean: 0.6, sd: 0.32659863}, NormDBSF, 10, 0.7041241},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.st.normalize(tt.kind, tt.s); !approx(got, tt.want) {
				t.Errorf("normalize(%s, %v) = %v, want %v", tt.kind, tt.s, got, tt.want)
			}
		})
	}
}
