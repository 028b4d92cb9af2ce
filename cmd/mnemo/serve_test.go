package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/testenv"
)

var listeningRe = regexp.MustCompile(`listening on (http://\S+)`)

// startServe runs `mnemo serve` in process on a free loopback port and
// returns its URL and a stop function that cancels it and returns its exit
// code and stderr.
func startServe(t *testing.T, c *cli, args ...string) (string, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.SyncBuffer{}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, getenv: func(k string) string { return c.env[k] }}
	done := make(chan int, 1)
	go func() { done <- run(ctx, a, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listeningRe.FindStringSubmatch(stderr.String()); m != nil {
			stopped := false
			var code int
			stop := func() (int, string) {
				if !stopped {
					cancel()
					code, stopped = <-done, true
				}
				return code, stderr.String()
			}
			t.Cleanup(func() { stop() })
			return m[1], stop
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func httpDo(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServe_SingleUserEndToEnd(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	url, stop := startServe(t, c, "--profile", "me")
	code, body := httpDo(t, "POST", url+"/v1/memories", "", `{"content": "served memory about Threadline", "session": "s1"}`)
	if code != 201 {
		t.Fatalf("POST: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if code, body := httpDo(t, "POST", url+"/v1/recall", "", `{"query": "Threadline"}`); code != 200 || !strings.Contains(body, created.ID) {
		t.Errorf("recall: %d %s", code, body)
	}
	if code, body := httpDo(t, "PATCH", url+"/v1/settings", "", `{"keyword_weight": 9}`); code != 400 || !strings.Contains(body, "keyword_weight") {
		t.Errorf("bad setting: %d %s", code, body)
	}
	if code, body := httpDo(t, "GET", url+"/healthz", "", ""); code != 200 || !strings.Contains(body, "ok") {
		t.Errorf("healthz: %d %s", code, body)
	}
	if code, stderr := stop(); code != 0 || !strings.Contains(stderr, "single-user mode") || !strings.Contains(stderr, "stopped") {
		t.Errorf("serve exited %d: %s", code, stderr)
	}
	// The memory is in the file, under the --profile profile.
	if out := c.ok("get", "--profile", "me", created.ID); !strings.Contains(out, "served memory") {
		t.Errorf("get after serve: %s", out)
	}
}

func TestServe_KeysEndToEnd(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var alice, bob struct{ Key string }
	json.Unmarshal([]byte(c.ok("keys", "create", "--profile", "alice", "--json")), &alice)
	json.Unmarshal([]byte(c.ok("keys", "create", "--profile", "bob", "--json")), &bob)
	url, stop := startServe(t, c)
	if code, _ := httpDo(t, "GET", url+"/v1/settings", "", ""); code != 401 {
		t.Errorf("no key: %d", code)
	}
	code, body := httpDo(t, "POST", url+"/v1/memories", alice.Key, `{"content": "alice's secret"}`)
	if code != 201 {
		t.Fatalf("POST: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if code, _ := httpDo(t, "GET", url+"/v1/memories/"+created.ID, bob.Key, ""); code != 404 {
		t.Errorf("bob reads alice's memory: %d", code)
	}
	if code, _ := httpDo(t, "GET", url+"/v1/memories/"+created.ID, alice.Key, ""); code != 200 {
		t.Errorf("alice reads her memory: %d", code)
	}
	// Revoking a key takes effect on the next request.
	c.ok("keys", "revoke", keyID(t, c, "bob"))
	if code, _ := httpDo(t, "GET", url+"/v1/settings", bob.Key, ""); code != 401 {
		t.Errorf("revoked key: %d", code)
	}
	// Even with every key revoked the server stays closed.
	c.ok("keys", "revoke", keyID(t, c, "alice"))
	if code, _ := httpDo(t, "GET", url+"/v1/settings", "", ""); code != 401 {
		t.Errorf("no key after revoking all: %d", code)
	}
	if code, stderr := stop(); code != 0 || !strings.Contains(stderr, "API keys required") {
		t.Errorf("serve exited %d: %s", code, stderr)
	}
}

func keyID(t *testing.T, c *cli, profile string) string {
	t.Helper()
	var ks []struct{ ID string }
	if err := json.Unmarshal([]byte(c.ok("keys", "list", "--profile", profile, "--json")), &ks); err != nil || len(ks) != 1 {
		t.Fatalf("keys list --profile %s: %v %v", profile, ks, err)
	}
	return ks[0].ID
}

func TestServe_RefusesToExposeSingleUserMode(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:7077"} {
		code, _, stderr := c.run("", "serve", "--addr", addr)
		if code != 2 || !strings.Contains(stderr, "single-user mode") || !strings.Contains(stderr, "keys create") {
			t.Errorf("serve --addr %s without keys: exit %d: %s", addr, code, stderr)
		}
	}
}

func TestServe_FlagErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, args := range [][]string{
		{"serve", "--max-body", "lots"},
		{"serve", "--max-body", "0"},
		{"serve", "--addr", "7077"},
		{"serve", "--handler-timeout", "0s"},
		{"serve", "extra"},
		{"serve", "--nope"},
	} {
		if code, _, stderr := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

func TestServe_ParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1048576": 1 << 20, "1MiB": 1 << 20, "1mib": 1 << 20, "512KiB": 512 << 10, "64k": 64 << 10,
		"2M": 2 << 20, "1MB": 1000000, "10b": 10, " 3 MiB ": 3 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5MiB", "MiB", "1TiB", "99999999999999999999"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}

// TestServe_GracefulShutdownLosesNoAcknowledgedWrite runs serve as a real
// process, writes to it from several clients, sends SIGTERM mid-stream and
// checks that every write answered 201 is in the database afterwards, and
// that the WAL was checkpointed.
func TestServe_GracefulShutdownLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "mnemo.db")
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--profile", "p")
	cmd.Env = append(os.Environ(), "MNEMO_TEST_MAIN=1", "MNEMO_DB="+db, "MNEMO_HOME="+dir, "MNEMO_EMBEDDER=hash")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var url string
	var logs strings.Builder
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatalf("serve did not start: %s", logs.String())
	}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
		}
	}()

	var (
		mu     sync.Mutex
		acked  []string
		failed int
		wg     sync.WaitGroup
	)
	client := &http.Client{Timeout: 10 * time.Second}
	stopWriting := make(chan struct{})
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopWriting:
					return
				default:
				}
				body := fmt.Sprintf(`{"memories": [{"content": "writer %d memory %d"}, {"content": "writer %d memory %d bis"}]}`, w, i, w, i)
				res, err := client.Post(url+"/v1/memories", "application/json", strings.NewReader(body))
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					continue // refused once the listener is closed
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode == 201 {
					var out struct{ IDs []string }
					if err := json.Unmarshal(b, &out); err != nil || len(out.IDs) != 2 {
						t.Errorf("201 with body %s", b)
						continue
					}
					mu.Lock()
					acked = append(acked, out.IDs...)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(400 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	// Wait closes the stderr pipe: only once every line is read.
	go func() { <-logDone; waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Errorf("serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of SIGTERM")
	}
	close(stopWriting)
	wg.Wait()
	<-logDone
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("serve log: %s", logs.String())
	}
	if len(acked) < 10 {
		t.Fatalf("only %d writes acknowledged before SIGTERM", len(acked))
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("WAL holds %d bytes after shutdown: not checkpointed", fi.Size())
	}
	e, err := mnemo.Open(db, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	missing := 0
	for _, id := range acked {
		if _, err := e.Get(t.Context(), "p", id); err != nil {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes are missing after shutdown", missing, len(acked))
	}
	t.Logf("%d acknowledged writes kept, %d requests refused after shutdown began", len(acked), failed)
}

// TestServe_RevokedKeysKeepKeysMode checks that serve started on a
// database whose keys are all revoked requires keys, and serves without
// them only with --single-user, which refuses to start while a key is
// active.
func TestServe_RevokedKeysKeepKeysMode(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("keys", "create", "--profile", "me")
	if code, _, stderr := c.run("", "serve", "--addr", "127.0.0.1:0", "--single-user"); code != 2 || !strings.Contains(stderr, "revoke them first") {
		t.Errorf("--single-user with an active key: exit %d: %s", code, stderr)
	}
	c.ok("keys", "revoke", keyID(t, c, "me"))

	url, stop := startServe(t, c)
	if code, body := httpDo(t, "GET", url+"/v1/settings", "", ""); code != 401 {
		t.Errorf("no key, every key revoked: %d %s", code, body)
	}
	if code, stderr := stop(); code != 0 || !strings.Contains(stderr, "API keys required, 0 active, 1 revoked") || !strings.Contains(stderr, "--single-user") {
		t.Errorf("serve exited %d: %s", code, stderr)
	}

	url, stop = startServe(t, c, "--single-user", "--profile", "me")
	if code, body := httpDo(t, "GET", url+"/v1/settings", "", ""); code != 200 {
		t.Errorf("--single-user, every key revoked: %d %s", code, body)
	}
	if code, stderr := stop(); code != 0 || !strings.Contains(stderr, "single-user mode") {
		t.Errorf("serve --single-user exited %d: %s", code, stderr)
	}
	if code, _, stderr := c.run("", "serve", "--single-user", "--require-keys"); code != 2 {
		t.Errorf("--single-user --require-keys: exit %d: %s", code, stderr)
	}
}
