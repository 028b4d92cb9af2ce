package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

func cmdKeys(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "keys")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "create: the profile the key is bound to (required); list: only this profile's keys (default $MNEMO_PROFILE)")
	name := fs.String("name", "", "create: a label for the key (e.g. the machine it is for)")
	all := fs.Bool("all", false, "list: include revoked keys")
	admin := fs.Bool("admin", false, "create: an admin key, for /metrics; it acts on no profile's memories")
	service := fs.Bool("service", false, "create: a service key, acting on the profile each request names (any profile, or one of --profiles)")
	profiles := fs.String("profiles", "", "create --service: the comma-separated profiles the key may act on (default: any)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo keys create --profile P [--name N] [--json]
       mnemo keys create --service [--profiles P1,P2] [--name N] [--json]
       mnemo keys create --admin [--name N] [--json]
       mnemo keys list [--profile P] [--all] [--json]
       mnemo keys revoke ID...

An API key authenticates HTTP and MCP requests to mnemo serve
("Authorization: Bearer KEY") and binds them to its profile. A service key
(--service), for a backend serving many end users, acts on the profile each
request names (X-Mnemo-Profile header, ?profile=, a "profile" body field or
MCP argument): any profile, or one of --profiles. An admin key (--admin)
reads /metrics and acts on no profile. The key is printed once,
at creation; only its SHA-256 is stored. Revoked keys are kept: once a key
has existed, mnemo serve requires keys (see mnemo serve --single-user). Key management never
loads the embedder (--embedder is accepted and ignored).`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return usagef("want create, list or revoke")
	}
	verb, rest := pos[0], pos[1:]
	switch verb {
	case "create", "list":
		if len(rest) > 0 {
			return usagef("keys %s takes no arguments, got %q", verb, strings.Join(rest, " "))
		}
	case "revoke":
		if len(rest) == 0 {
			return usagef("keys revoke: give the ids of the keys to revoke (see mnemo keys list)")
		}
	default:
		fs.Usage()
		return usagef("unknown keys command %q: want create, list or revoke", verb)
	}
	if (*admin || *service || *profiles != "") && verb != "create" {
		return usagef("--admin, --service and --profiles are for keys create")
	}
	if *admin && *service {
		return usagef("--admin and --service exclude each other")
	}
	if *profiles != "" && !*service {
		return usagef("--profiles is for a service key (--service); a profile key takes --profile")
	}
	if verb == "create" && (*admin || *service) {
		// $MNEMO_PROFILE is ignored; an explicit --profile is a mistake.
		profileFlag := flagGiven(fs, "profile")
		if profileFlag && *admin {
			return usagef("--admin and --profile exclude each other: an admin key acts on no profile")
		}
		if profileFlag {
			return usagef("--service and --profile exclude each other: a service key's requests name their profile (limit them with --profiles)")
		}
	} else if verb == "create" {
		if err := requireProfile(*profile); err != nil {
			return err
		}
	}
	var serviceList []string // --profiles, checked before the database is opened
	if *service {
		if flagGiven(fs, "profiles") {
			if serviceList, err = profileList(*profiles); err != nil {
				return err
			}
		}
	}
	e, err := openKeys(a, ef.db, verb != "create")
	if err != nil {
		return err
	}
	defer e.Close()
	switch verb {
	case "create":
		var token string
		var k mnemo.APIKey
		switch {
		case *admin:
			token, k, err = e.CreateAdminKey(ctx, *name)
		case *service:
			token, k, err = e.CreateServiceKey(ctx, *name, serviceList)
		default:
			token, k, err = e.CreateKey(ctx, *profile, *name)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(a, struct {
				Key string `json:"key"`
				keyJSON
			}{token, toKeyJSON(k)})
		}
		fmt.Fprintln(a.stdout, token)
		switch {
		case *admin:
			fmt.Fprintf(a.stderr, "created admin key %s: store it now, it is not shown again\n", k.ID)
		case *service:
			fmt.Fprintf(a.stderr, "created service key %s for %s: store it now, it is not shown again\n", k.ID, serviceProfiles(k))
		default:
			fmt.Fprintf(a.stderr, "created key %s for profile %q: store it now, it is not shown again\n", k.ID, k.Profile)
		}
		return nil
	case "list":
		ks, err := e.Keys(ctx, *profile, *all)
		if err != nil {
			return err
		}
		if *asJSON {
			out := make([]keyJSON, 0, len(ks))
			for _, k := range ks {
				out = append(out, toKeyJSON(k))
			}
			return writeJSON(a, out)
		}
		if len(ks) == 0 {
			fmt.Fprintln(a.stderr, "no API keys")
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tROLE\tPROFILE\tNAME\tPREFIX\tCREATED\tREVOKED")
		for _, k := range ks {
			revoked := "-"
			if !k.RevokedAt.IsZero() {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			profile := k.Profile
			switch {
			case k.Role == mnemo.KeyRoleService:
				profile = serviceProfiles(k)
			case profile == "":
				profile = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s…\t%s\t%s\n", k.ID, roleName(k.Role), profile, k.Name, k.Prefix, k.CreatedAt.Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	default: // revoke
		for _, id := range rest {
			if err := e.RevokeKey(ctx, id); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "revoked", id)
		}
		return nil
	}
}

// openKeys opens the engine for key management, which never embeds: the
// configured embedder is not loaded, so keys can be managed on a machine
// without the built-in model or without a remote provider's credentials.
// Only creating a key may create the database.
func openKeys(a *app, db string, mustExist bool) (*mnemo.Engine, error) {
	path, err := a.dbPath(db)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := mnemo.Open(path, &mnemo.Config{Logger: log, AccessFlushInterval: -1, MustExist: mustExist})
	if errors.Is(err, mnemotype.ErrNotFound) {
		return nil, noDatabase(path)
	}
	return e, err
}

// roleName names a key's role as the CLI shows it: "profile", "service"
// or "admin".
func roleName(role string) string {
	if role == mnemo.KeyRoleProfile {
		return "profile"
	}
	return role
}

// serviceProfiles describes the profiles a service key may act on.
func serviceProfiles(k mnemo.APIKey) string {
	if len(k.Profiles) == 0 {
		return "any profile"
	}
	return strings.Join(k.Profiles, ",")
}

// keyJSON is a key as `keys list --json` prints it: never the token or
// its hash.
type keyJSON struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Profile string `json:"profile"`
	// Profiles lists a service key's profiles; absent: any.
	Profiles  []string   `json:"profiles,omitempty"`
	Name      string     `json:"name,omitempty"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

func toKeyJSON(k mnemo.APIKey) keyJSON {
	out := keyJSON{ID: k.ID, Role: roleName(k.Role), Profile: k.Profile, Profiles: k.Profiles, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt}
	if !k.RevokedAt.IsZero() {
		r := k.RevokedAt
		out.RevokedAt = &r
	}
	return out
}

// profileList parses --profiles: profile names separated by commas, each
// exactly as given (mnemotype.CheckProfile: no spaces around a name).
func profileList(flagValue string) ([]string, error) {
	var ps []string
	for i, p := range strings.Split(flagValue, ",") {
		if err := mnemotype.CheckProfile(p); err != nil {
			return nil, usagef("--profiles %q, name %d: %v", flagValue, i+1, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}
