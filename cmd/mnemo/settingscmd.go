package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mnemo-dev/mnemo"
)

func cmdSettings(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "settings")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", "", "profile whose settings to show or change (empty: server-wide defaults)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo settings get [--profile P] [--json]\n       mnemo settings set [--profile P] key=value...\nkeys: "+
			strings.Join(mnemo.SettingNames(), ", "))
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "get" && pos[0] != "set") {
		fs.Usage()
		return usagef("want get or set")
	}
	var kv map[string]string
	if pos[0] == "set" {
		if len(pos) == 1 {
			return usagef("settings set: give at least one key=value")
		}
		kv = map[string]string{}
		for _, p := range pos[1:] {
			k, v, ok := strings.Cut(p, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return usagef("settings set: %q is not key=value", p)
			}
			kv[strings.TrimSpace(k)] = v
		}
	} else if len(pos) > 1 {
		return usagef("settings get takes no arguments")
	}
	e, err := ef.open(a)
	if err != nil {
		return err
	}
	defer e.Close()
	var s mnemo.Settings
	if kv != nil {
		s, err = e.UpdateSettings(ctx, *profile, kv)
	} else {
		s, err = e.Settings(ctx, *profile)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a, s)
	}
	m := s.Map()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(a.stdout, "%s=%s\n", k, m[k])
	}
	return nil
}
