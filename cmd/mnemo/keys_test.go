package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestKeys_CreateListRevoke(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var created struct{ Key, ID, Profile string }
	if err := json.Unmarshal([]byte(c.ok("keys", "create", "--profile", "alice", "--name", "laptop", "--json")), &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Key, "mnemo_") || created.ID == "" || created.Profile != "alice" {
		t.Fatalf("create --json = %+v", created)
	}
	code, out, stderr := c.run("", "keys", "create", "--profile", "bob")
	if code != 0 || !strings.HasPrefix(out, "mnemo_") || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(stderr, "not shown again") {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	list := c.ok("keys", "list")
	if !strings.Contains(list, created.ID) || !strings.Contains(list, "laptop") || !strings.Contains(list, "bob") {
		t.Errorf("list:\n%s", list)
	}
	js := c.ok("keys", "list", "--json", "--profile", "alice")
	if strings.Contains(js, created.Key) || strings.Contains(js, created.Key[len(created.Key)-20:]) || strings.Contains(js, "hash") {
		t.Errorf("list --json shows secrets: %s", js)
	}
	var ks []struct{ ID, Profile, Prefix string }
	if err := json.Unmarshal([]byte(js), &ks); err != nil || len(ks) != 1 || ks[0].ID != created.ID || !strings.HasPrefix(created.Key, ks[0].Prefix) {
		t.Errorf("list --json --profile alice = %+v, %v", ks, err)
	}

	if out := c.ok("keys", "revoke", created.ID); !strings.Contains(out, "revoked "+created.ID) {
		t.Errorf("revoke: %q", out)
	}
	if list := c.ok("keys", "list"); strings.Contains(list, created.ID) {
		t.Errorf("revoked key still listed as active:\n%s", list)
	}
	if list := c.ok("keys", "list", "--all"); !strings.Contains(list, created.ID) {
		t.Errorf("list --all lacks the revoked key:\n%s", list)
	}
	if code, _, stderr := c.run("", "keys", "revoke", created.ID); code != exitNotFound || !strings.Contains(stderr, "not found") {
		t.Errorf("revoking twice: exit %d %s", code, stderr)
	}
}

func TestKeys_UsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, args := range [][]string{
		{"keys"},
		{"keys", "rotate"},
		{"keys", "create"},
		{"keys", "create", "--profile", " "},
		{"keys", "create", "--profile", "p", "extra"},
		{"keys", "revoke"},
		{"keys", "list", "x"},
	} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// No key created: not even a database, or no key in it.
	if code, out, errs := c.run("", "keys", "list", "--json"); code != exitNotFound && (code != 0 || strings.TrimSpace(out) != "[]") {
		t.Errorf("no key may be created by failed commands: exit %d: %s %s", code, out, errs)
	}
}

// TestKeys_WithoutTheModel checks that key management works where the
// configured embedder cannot load (the built-in model not installed).
func TestKeys_WithoutTheModel(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env["MNEMO_EMBEDDER"] = "glove" // MNEMO_HOME is empty: no model file
	if code, _, errs := c.run("", "add", "--profile", "alice", "needs the model"); code == 0 {
		t.Fatalf("add without the model succeeded; the test's premise is wrong: %s", errs)
	}
	out := c.ok("keys", "create", "--profile", "alice", "--json")
	var k struct{ ID string }
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.ID == "" {
		t.Fatalf("create: %s %v", out, err)
	}
	if list := c.ok("keys", "list"); !strings.Contains(list, k.ID) {
		t.Errorf("list:\n%s", list)
	}
	c.ok("keys", "revoke", k.ID)
}

// TestKeys_Admin checks keys create --admin and the role in keys list.
func TestKeys_Admin(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env["MNEMO_PROFILE"] = "ignored-by-admin"
	var created struct{ Key, ID, Profile, Role string }
	if err := json.Unmarshal([]byte(c.ok("keys", "create", "--admin", "--name", "ops", "--json")), &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Key, "mnemo_") || created.Role != "admin" || created.Profile != "" {
		t.Fatalf("create --admin --json = %+v", created)
	}
	delete(c.env, "MNEMO_PROFILE")
	c.ok("keys", "create", "--profile", "alice")
	list := c.ok("keys", "list")
	if !strings.Contains(list, "ROLE") || !regexp.MustCompile(created.ID+`\s+admin\s+-\s+ops`).MatchString(list) ||
		!regexp.MustCompile(`\s+profile\s+alice\s+`).MatchString(list) {
		t.Errorf("list:\n%s", list)
	}
	var ks []struct{ ID, Role, Profile string }
	if err := json.Unmarshal([]byte(c.ok("keys", "list", "--json")), &ks); err != nil || len(ks) != 2 ||
		ks[0].Role != "admin" || ks[1].Role != "profile" {
		t.Errorf("list --json = %+v, %v", ks, err)
	}
	for _, args := range [][]string{
		{"keys", "create", "--admin", "--profile", "alice"},
		{"keys", "list", "--admin"},
	} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestKeys_Service checks keys create --service [--profiles], the
// profiles in keys list, and that keys list --profile P lists the service
// keys that may act on P.
func TestKeys_Service(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env["MNEMO_PROFILE"] = "ignored-by-service"
	type keyOut struct {
		Key, ID, Profile, Role string
		Profiles               []string
	}
	var anyKey, listed keyOut
	if err := json.Unmarshal([]byte(c.ok("keys", "create", "--service", "--name", "backend", "--json")), &anyKey); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(anyKey.Key, "mnemo_") || anyKey.Role != "service" || anyKey.Profile != "" || anyKey.Profiles != nil {
		t.Fatalf("create --service --json = %+v", anyKey)
	}
	for _, bad := range []string{"alice, bob", "alice,", "alice,bob ", ""} {
		if out := c.fail(2, "keys", "create", "--service", "--profiles", bad); !strings.Contains(out, "--profiles") {
			t.Errorf("create --service --profiles %q: %s", bad, out)
		}
	}
	if err := json.Unmarshal([]byte(c.ok("keys", "create", "--service", "--profiles", "alice,bob,alice", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if listed.Role != "service" || !slices.Equal(listed.Profiles, []string{"alice", "bob"}) {
		t.Fatalf("create --service --profiles --json = %+v", listed)
	}
	delete(c.env, "MNEMO_PROFILE")
	c.ok("keys", "create", "--profile", "carol")
	list := c.ok("keys", "list")
	if !regexp.MustCompile(anyKey.ID+`\s+service\s+any profile\s+backend`).MatchString(list) ||
		!regexp.MustCompile(listed.ID+`\s+service\s+alice,bob\s+`).MatchString(list) {
		t.Errorf("list:\n%s", list)
	}
	for p, want := range map[string][]string{"alice": {anyKey.ID, listed.ID}, "carol": {anyKey.ID}} {
		var ks []keyOut
		if err := json.Unmarshal([]byte(c.ok("keys", "list", "--profile", p, "--json")), &ks); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range ks {
			if k.Role == "service" {
				ids = append(ids, k.ID)
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("keys list --profile %s: service keys %v, want %v", p, ids, want)
		}
	}
	for _, args := range [][]string{
		{"keys", "create", "--service", "--profile", "alice"},
		{"keys", "create", "--service", "--admin"},
		{"keys", "create", "--profile", "alice", "--profiles", "bob"},
		{"keys", "create", "--service", "--profiles", ","},
		{"keys", "create", "--service", "--profiles", ""},
		{"keys", "list", "--service"},
	} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
