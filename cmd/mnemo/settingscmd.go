package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mnemo-dev/mnemo"
)

func cmdSettings(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "settings")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", "", "profile whose settings to show or change (empty: server-wide defaults)")
	allProfiles := fs.Bool("all-profiles", false, "set or reset the server-wide defaults, which every profile without its own value follows")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo settings get [--profile P] [--json]\n"+
			"       mnemo settings set (--profile P | --all-profiles) key=value...\n"+
			"       mnemo settings reset (--profile P | --all-profiles) key...   (back to the server-wide value, else the default)\n"+
			"keys: "+strings.Join(mnemo.SettingNames(), ", "))
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "get" && pos[0] != "set" && pos[0] != "reset") {
		fs.Usage()
		return usagef("want get, set or reset")
	}
	if *profile != "" {
		if err := checkProfileFlag(*profile); err != nil {
			return err
		}
	}
	if pos[0] != "get" {
		switch {
		case *profile == "" && !*allProfiles:
			return usagef("settings %s without --profile changes the defaults of every profile: pass --all-profiles to mean it, or --profile P", pos[0])
		case *profile != "" && *allProfiles:
			return usagef("--profile and --all-profiles exclude each other")
		}
	} else if *allProfiles {
		return usagef("settings get shows the server-wide defaults without --profile; --all-profiles is for set and reset")
	}
	var kv map[string]string
	var reset []string
	switch pos[0] {
	case "reset":
		if reset = pos[1:]; len(reset) == 0 {
			return usagef("settings reset: name at least one setting")
		}
	case "set":
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
	default:
		if len(pos) > 1 {
			return usagef("settings get takes no arguments")
		}
	}
	given := slices.Clone(reset)
	for k := range kv {
		given = append(given, k)
	}
	for _, k := range given {
		if name, ok := mnemo.SettingKey(k); ok && strings.Contains(name, "_") && !strings.Contains(k, "_") {
			fmt.Fprintf(a.stderr, "mnemo: the setting %s is now spelled %s (the old spelling works until the next release)\n", k, name)
		}
	}
	open := ef.openExisting
	if kv != nil {
		open = ef.open // a server's settings may be set before its first memory
	}
	e, err := open(a)
	if err != nil {
		return err
	}
	defer e.Close()
	var s mnemo.Settings
	switch {
	case kv != nil:
		s, err = e.UpdateSettings(ctx, *profile, kv)
	case reset != nil:
		s, err = e.ResetSettings(ctx, *profile, reset)
	default:
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
