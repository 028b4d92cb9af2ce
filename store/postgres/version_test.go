package postgres

import "testing"

func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"0.8.0", true}, {"0.8.1", true}, {"0.10.0", true}, {"1.0", true}, {"0.7.4", false}, {"0.5.0", false},
		{"0", false}, {"", false}, {"x.y", false}, {"0.8", true},
	} {
		if got := versionAtLeast(c.v, minVectorVersion); got != c.want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}
