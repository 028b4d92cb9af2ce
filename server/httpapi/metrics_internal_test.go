package httpapi

import "testing"

func TestLabels_Escape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"dense", `leg="dense"`},
		{"", `leg=""`},
		{`a"b`, `leg="a\"b"`},
		{`back\slash`, `leg="back\\slash"`},
		{"two\nlines", `leg="two\nlines"`},
		{"\\\"\n", `leg="\\\"\n"`},
	} {
		if got := labels("leg", c.in); got != c.want {
			t.Errorf("labels(leg, %q) = %s, want %s", c.in, got, c.want)
		}
	}
}
