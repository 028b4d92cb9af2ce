package eval

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg   string
		names []string
		want  map[string]string // overrides of the first config
	}{
		{"default", []string{"default"}, map[string]string{}},
		{"lexical", []string{"lexical"}, map[string]string{"keyword_weight": "1", "semantic_weight": "0", "recency_weight": "0", "access_weight": "0"}},
		{"cc", []string{"cc"}, map[string]string{"strategy": "weighted_average", "normalization": "minmax",
			"keyword_weight": "1", "semantic_weight": "1", "recency_weight": "0", "access_weight": "0"}},
		{"all", []string{"default", "lexical", "dense", "rrf", "cc", "dbsf", "score_weighted_rrf", "max_confidence"}, map[string]string{}},
		{"mine=strategy=rrf,lexical=1,dense=0.5,recency=0,access=0,k=20", []string{"mine"}, map[string]string{
			"strategy": "rrf", "keyword_weight": "1", "semantic_weight": "0.5", "recency_weight": "0", "access_weight": "0", "rrf_k": "20"}},
		{"x=kparam=3,missing=impute_min,normalization=zscore,fetch_multiplier=5", []string{"x"}, map[string]string{
			"k_param": "3", "missing_leg": "impute_min", "normalization": "zscore", "fetch_multiplier": "5"}},
		{"half=cc,dense=0.5", []string{"half"}, map[string]string{"strategy": "weighted_average", "normalization": "minmax",
			"keyword_weight": "1", "semantic_weight": "0.5", "recency_weight": "0", "access_weight": "0"}},
		{" spaced = lexical = 2 , dense=1 ", []string{"spaced"}, map[string]string{"keyword_weight": "2", "semantic_weight": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			t.Parallel()
			cs, err := ParseConfig(tt.arg)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range cs {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.names, ",") {
				t.Fatalf("names = %v, want %v", names, tt.names)
			}
			if !maps.Equal(cs[0].Overrides, tt.want) {
				t.Fatalf("overrides = %v, want %v", cs[0].Overrides, tt.want)
			}
		})
	}
}

func TestParseConfig_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct{ arg, want string }{
		{"nosuch", `config "nosuch": not a preset`},
		{"=lexical=1", "the name is empty"},
		{"bad=dense=7", `config "bad": dense=7: invalid input: semantic_weight = 7`},
		{"bad=strategy=magic", `config "bad": strategy=magic`},
		{"bad=colour=blue", `config "bad": colour=blue: invalid input: unknown setting "colour"`},
		{"bad=lexical=x", `config "bad": lexical=x: invalid input: keyword_weight`},
		{"bad=nosuchpreset", `want key=value (or a preset name`},
		{"bad==1", "the key is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig(tt.arg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if !errors.Is(err, mnemo.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestPresets_AreValid(t *testing.T) {
	t.Parallel()
	for _, name := range PresetNames() {
		cs, err := ParseConfig(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, c := range cs {
			if err := c.Validate(); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		}
	}
	d, _ := Preset("default")
	if len(d.Overrides) != 0 {
		t.Fatalf("default overrides %v: it must be exactly the engine defaults", d.Overrides)
	}
}

func TestParseSweep(t *testing.T) {
	t.Parallel()
	sw, err := ParseSweep("dense=0.25, 0.5,1,2")
	if err != nil {
		t.Fatal(err)
	}
	if sw.Key != "dense" || strings.Join(sw.Values, " ") != "0.25 0.5 1 2" || SettingKey(sw.Key) != "semantic_weight" {
		t.Fatalf("got %+v", sw)
	}
	if sw, err := ParseSweep("rrf_k=10,60"); err != nil || SettingKey(sw.Key) != "rrf_k" {
		t.Fatalf("pass-through key: %+v, %v", sw, err)
	}
	for _, bad := range []string{"dense", "=1,2", "dense=", "dense=1,9", "k=0"} {
		if _, err := ParseSweep(bad); err == nil || !errors.Is(err, mnemo.ErrInvalid) {
			t.Errorf("ParseSweep(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestConfig_SettingsKey(t *testing.T) {
	t.Parallel()
	a, _ := ParseConfig("a=strategy=rrf,dense=1")
	b, _ := ParseConfig("b=dense=1.0,strategy=rrf")
	c, _ := ParseConfig("c=dense=0.9")
	if a[0].settingsKey() != b[0].settingsKey() {
		t.Error("equal settings have different keys")
	}
	if a[0].settingsKey() == c[0].settingsKey() {
		t.Error("different settings share a key")
	}
}

func TestParseConfig_SpecExpandsPresets(t *testing.T) {
	t.Parallel()
	cs, err := ParseConfig("half=cc, dense=0.5,k=20")
	if err != nil {
		t.Fatal(err)
	}
	want := "strategy=weighted_average,normalization=minmax,lexical=1,dense=0.5,recency=0,access=0,k=20"
	if cs[0].Spec != want {
		t.Fatalf("spec = %q, want %q", cs[0].Spec, want)
	}
	cs, err = ParseConfig("mixed=semantic_weight=0.3,dense=0.4")
	if err != nil || cs[0].Spec != "dense=0.4" || cs[0].Overrides["semantic_weight"] != "0.4" {
		t.Fatalf("aliases of one key: %+v, %v", cs, err)
	}
}
