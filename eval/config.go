package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo-dev/mnemo"
)

// Config is one recall configuration under evaluation: a name and the
// settings it overrides, on top of the engine's defaults.
type Config struct {
	Name string
	// Spec is the configuration as written (short keys), for reports.
	Spec string
	// Overrides are settings keys and values applied over the engine's
	// defaults; Run stores the result as the profile's settings.
	Overrides map[string]string
}

// specKeys maps the short keys of a SPEC onto settings keys; any other key
// is passed through unchanged, so every setting can be set or swept.
var specKeys = map[string]string{
	"lexical":       "keyword_weight",
	"dense":         "semantic_weight",
	"recency":       "recency_weight",
	"access":        "access_weight",
	"k":             "rrf_k",
	"kparam":        "k_param",
	"normalization": "normalization",
	"missing":       "missing_leg",
	"strategy":      "strategy",
}

// SettingKey returns the settings key a SPEC key stands for.
func SettingKey(key string) string {
	key = strings.TrimSpace(key)
	if s, ok := specKeys[strings.ToLower(key)]; ok {
		return s
	}
	return key
}

// shortKey is SettingKey's inverse for display.
func shortKey(setting string) string {
	for short, s := range specKeys {
		if strings.EqualFold(s, setting) && short != s {
			return short
		}
	}
	return setting
}

// Presets, in their canonical order. "default" is exactly what a user gets
// with no settings changed; the others fix the strategy and the four leg
// weights (and, for rrf and cc, their constant or normalization) and take
// every other setting from the defaults.
var presets = []struct{ name, spec string }{
	{"default", ""},
	{"lexical", "lexical=1,dense=0,recency=0,access=0"},
	{"dense", "lexical=0,dense=1,recency=0,access=0"},
	{"rrf", "strategy=rrf,lexical=1,dense=1,recency=0,access=0,k=60"},
	{"cc", "strategy=weighted_average,normalization=minmax,lexical=1,dense=1,recency=0,access=0"},
	{"dbsf", "strategy=dbsf,lexical=1,dense=1,recency=0,access=0"},
	{"score_weighted_rrf", "strategy=score_weighted_rrf,lexical=1,dense=1,recency=0,access=0"},
	{"max_confidence", "strategy=max_confidence,lexical=1,dense=1,recency=0,access=0"},
}

// PresetNames lists the presets and "all" (every preset).
func PresetNames() []string {
	out := make([]string, 0, len(presets)+1)
	for _, p := range presets {
		out = append(out, p.name)
	}
	return append(out, "all")
}

// DefaultConfigNames are the configurations evaluated when none is asked for.
var DefaultConfigNames = []string{"default", "lexical", "dense", "rrf", "cc"}

// Preset returns the preset called name.
func Preset(name string) (Config, bool) {
	for _, p := range presets {
		if p.name == name {
			ov, _, err := parseSpec(p.spec)
			if err != nil {
				panic(err) // the presets are constants
			}
			return Config{Name: p.name, Spec: p.spec, Overrides: ov}, true
		}
	}
	return Config{}, false
}

// ParseConfig parses a --config value: a preset name ("all" expands to every
// preset), or NAME=SPEC where SPEC is comma-separated key=value pairs such as
// "strategy=rrf,lexical=1,dense=0.5,k=60". A SPEC element without "=" names
// a preset to start from ("mine=cc,dense=0.5"). Values are validated against
// the engine's settings; errors name the configuration and the key.
func ParseConfig(arg string) ([]Config, error) {
	arg = strings.TrimSpace(arg)
	name, spec, custom := strings.Cut(arg, "=")
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, invalidf("config %q: the name is empty", arg)
	}
	if !custom {
		if name == "all" {
			out := make([]Config, len(presets))
			for i, p := range presets {
				out[i], _ = Preset(p.name)
			}
			return out, nil
		}
		c, ok := Preset(name)
		if !ok {
			return nil, invalidf("config %q: not a preset (%s); write NAME=SPEC for your own, e.g. %s=strategy=rrf,dense=0.5",
				name, strings.Join(PresetNames(), ", "), name)
		}
		return []Config{c}, nil
	}
	if strings.ContainsAny(name, ",") {
		return nil, invalidf("config %q: the name must not contain a comma", name)
	}
	ov, expanded, err := parseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("config %q: %w", name, err)
	}
	c := Config{Name: name, Spec: expanded, Overrides: ov}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return []Config{c}, nil
}

// parseSpec turns "key=value,..." into settings overrides; a bare preset
// name contributes that preset's overrides first (later pairs win). It also
// returns the spec written out with every preset expanded, keys in first-seen
// order.
func parseSpec(spec string) (map[string]string, string, error) {
	out := map[string]string{}
	var order []string            // short keys as written, first-seen order
	values := map[string]string{} // short key → value
	put := func(k, v string) {
		sk := strings.ToLower(SettingKey(k))
		if _, seen := values[sk]; !seen {
			order = append(order, k)
		} else {
			for i, o := range order {
				if strings.ToLower(SettingKey(o)) == sk {
					order[i] = k
				}
			}
		}
		values[sk] = v
		out[SettingKey(k)] = v
	}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			p, isPreset := presetSpec(part)
			if !isPreset {
				return nil, "", invalidf("%q: want key=value (or a preset name: %s)", part, strings.Join(PresetNames()[:len(presets)], ", "))
			}
			for pp := range strings.SplitSeq(p, ",") {
				if pk, pv, ok := strings.Cut(pp, "="); ok {
					put(pk, pv)
				}
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			return nil, "", invalidf("%q: the key is empty", part)
		}
		put(k, v)
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k + "=" + values[strings.ToLower(SettingKey(k))]
	}
	return out, strings.Join(parts, ","), nil
}

func presetSpec(name string) (string, bool) {
	for _, p := range presets {
		if p.name == name {
			return p.spec, true
		}
	}
	return "", false
}

// Validate checks every override against the engine's settings, one key at
// a time so that the error names the key as written.
func (c Config) Validate() error {
	keys := make([]string, 0, len(c.Overrides))
	for k := range c.Overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	base := mnemo.DefaultSettings()
	for _, k := range keys {
		if _, err := base.Apply(map[string]string{k: c.Overrides[k]}); err != nil {
			return fmt.Errorf("config %q: %s=%s: %w", c.Name, shortKey(k), c.Overrides[k], err)
		}
	}
	if _, err := base.Apply(c.Overrides); err != nil {
		return fmt.Errorf("config %q: %w", c.Name, err)
	}
	return nil
}

// settingsKey identifies the effective settings of c, so that two
// configurations that resolve to the same settings are run once.
func (c Config) settingsKey() string {
	s, err := mnemo.DefaultSettings().Apply(c.Overrides)
	if err != nil {
		return "invalid:" + c.Name
	}
	m := s.Map()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + ";")
	}
	return b.String()
}

// with returns c with one more override, named name.
func (c Config) with(name, key, value string) Config {
	ov := make(map[string]string, len(c.Overrides)+1)
	for k, v := range c.Overrides {
		ov[k] = v
	}
	ov[SettingKey(key)] = value
	spec := key + "=" + value
	if c.Spec != "" {
		spec = c.Spec + "," + spec
	}
	return Config{Name: name, Spec: spec, Overrides: ov}
}

// accessWeighted reports whether c gives the access leg weight, which makes
// results depend on the queries run before (each recall counts an access).
func (c Config) accessWeighted() bool {
	s, err := mnemo.DefaultSettings().Apply(c.Overrides)
	return err == nil && s.AccessWeight > 0
}

// Sweep varies one setting over values, on top of base configurations.
type Sweep struct {
	// Key is the setting as written (a SPEC key such as dense or k, or any
	// settings key).
	Key    string
	Values []string
}

// ParseSweep parses "key=v1,v2,...".
func ParseSweep(arg string) (Sweep, error) {
	k, vs, ok := strings.Cut(arg, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Sweep{}, invalidf("sweep %q: want key=v1,v2,... such as k=10,20,40,60,100", arg)
	}
	sw := Sweep{Key: k}
	for v := range strings.SplitSeq(vs, ",") {
		if v = strings.TrimSpace(v); v != "" {
			sw.Values = append(sw.Values, v)
		}
	}
	if len(sw.Values) == 0 {
		return Sweep{}, invalidf("sweep %q: no values", arg)
	}
	base := mnemo.DefaultSettings()
	for _, v := range sw.Values {
		if _, err := base.Apply(map[string]string{SettingKey(k): v}); err != nil {
			return Sweep{}, fmt.Errorf("sweep %s=%s: %w", k, v, err)
		}
	}
	return sw, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", mnemo.ErrInvalid, fmt.Sprintf(format, args...))
}
