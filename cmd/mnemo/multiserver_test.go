package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
)

// server is a `mnemo serve` process of the several-servers test.
type server struct {
	url  string
	cmd  *exec.Cmd
	dead atomic.Bool
	logs *bytes.Buffer
	mu   sync.Mutex
}

// startServer starts `mnemo serve` as a real process (so that it can be
// killed with SIGKILL) on database db.
func startServer(t *testing.T, db, home string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--profile", "p")
	cmd.Env = append(os.Environ(), "MNEMO_TEST_MAIN=1", "MNEMO_DB="+db, "MNEMO_HOME="+home, "MNEMO_EMBEDDER=hash")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &server{cmd: cmd, logs: &bytes.Buffer{}}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		s.logs.WriteString(sc.Text() + "\n")
		if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
			s.url = m[1]
			break
		}
	}
	if s.url == "" {
		t.Fatalf("serve did not start: %s", s.logs.String())
	}
	go func() {
		for sc.Scan() {
			s.mu.Lock()
			s.logs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
	}()
	return s
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestServe_SeveralServersOnPostgres runs three `mnemo serve` processes on
// one PostgreSQL database while clients write through one server and at
// once recall through another; one server is killed with SIGKILL midway.
// No acknowledged write may be lost or missed by a recall through any
// server, the surviving servers answer every request, and a setting
// changed through one server is in force on the others within a second.
// MNEMO_SOAK_CLIENTS and MNEMO_SOAK_SECONDS scale it up (a soak
// run: 50 clients, 60 s); the defaults keep the suite quick.
func TestServe_SeveralServersOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	c := pgtest.Start(t)
	db := c.DSN("postgres") + "&schema=several"
	home := t.TempDir()
	servers := []*server{startServer(t, db, home), startServer(t, db, home), startServer(t, db, home)}
	clients := envInt("MNEMO_SOAK_CLIENTS", 12)
	duration := time.Duration(envInt("MNEMO_SOAK_SECONDS", 6)) * time.Second

	// Settings: changed through one, read through the others.
	if code, body := httpDo(t, "PATCH", servers[0].url+"/v1/settings", "", `{"keyword_weight": 1.7}`); code != 200 {
		t.Fatalf("PATCH /v1/settings: %d %s", code, body)
	}
	for _, s := range servers[1:] {
		deadline := time.Now().Add(time.Second)
		for {
			_, body := httpDo(t, "GET", s.url+"/v1/settings", "", "")
			if strings.Contains(body, `"keyword_weight":1.7`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the setting changed through another server is not in force after 1 s: %s", s.url, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	type ack struct{ id, token string }
	var (
		mu       sync.Mutex
		acked    []ack
		errs     []string
		missed   []string
		requests atomic.Int64
		serial   atomic.Int64
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		httpc    = &http.Client{Timeout: 15 * time.Second}
		killed   = servers[0]
		killedAt atomic.Int64
		errorOn  = func(s *server, what string) {
			if s.dead.Load() {
				return // the killed server: its clients' requests fail
			}
			mu.Lock()
			errs = append(errs, what)
			mu.Unlock()
		}
	)
	post := func(s *server, path, body string) (int, []byte, error) {
		requests.Add(1)
		res, err := httpc.Post(s.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, b, err
	}
	alive := func(r *rand.Rand, not *server) *server {
		for {
			s := servers[r.IntN(len(servers))]
			if !s.dead.Load() && s != not {
				return s
			}
		}
	}
	for w := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				token := "zq" + strconv.FormatInt(serial.Add(1), 36) + "x"
				to := alive(r, nil)
				code, body, err := post(to, "/v1/memories", fmt.Sprintf(`{"content": "client %d wrote %s"}`, w, token))
				if err != nil || code != 201 {
					errorOn(to, fmt.Sprintf("write through %s: %d %v %s", to.url, code, err, body))
					continue
				}
				var out struct{ ID string }
				if err := json.Unmarshal(body, &out); err != nil || out.ID == "" {
					t.Errorf("201 with body %s", body)
					continue
				}
				mu.Lock()
				acked = append(acked, ack{out.ID, token})
				mu.Unlock()
				from := alive(r, to)
				code, body, err = post(from, "/v1/recall", fmt.Sprintf(`{"query": %q, "min_relevance": 0, "limit": 3}`, token))
				if err != nil || code != 200 {
					errorOn(from, fmt.Sprintf("recall through %s: %d %v %s", from.url, code, err, body))
					continue
				}
				if !bytes.Contains(body, []byte(out.ID)) {
					mu.Lock()
					missed = append(missed, fmt.Sprintf("%s written through %s, recalled through %s at once: %s", out.ID, to.url, from.url, body))
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(duration / 2)
	killed.dead.Store(true)
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	killedAt.Store(int64(len(acked)))
	mu.Unlock()
	time.Sleep(duration / 2)
	close(stop)
	wg.Wait()

	for _, e := range errs {
		t.Error(e)
	}
	for _, m := range missed {
		t.Error(m)
	}
	if len(acked) < 20 {
		t.Fatalf("only %d writes acknowledged in %v", len(acked), duration)
	}
	// Every acknowledged write, through every surviving server.
	for _, s := range servers[1:] {
		for _, a := range acked {
			code, body, err := post(s, "/v1/recall", fmt.Sprintf(`{"query": %q, "min_relevance": 0, "limit": 3}`, a.token))
			if err != nil || code != 200 || !bytes.Contains(body, []byte(a.id)) {
				t.Errorf("%s: acknowledged memory %s (%s) not recalled: %d %v %s", s.url, a.id, a.token, code, err, body)
			}
		}
	}
	t.Logf("%d clients, %v, 3 servers (one killed after %d acknowledged writes): %d requests, %d writes acknowledged, none lost",
		clients, duration, killedAt.Load(), requests.Load(), len(acked))
}

// TestServe_ReplicaReadYourWrites: mnemo serve --replica sends recalls to a
// streaming replica; a client that writes and then recalls with the
// write's Mnemo-Consistency header sees its write, every time; without
// the header, a recall may be served by a replica that has not replayed
// it (shown with the replica's replay paused).
func TestServe_ReplicaReadYourWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL clusters")
	}
	t.Parallel()
	primary := pgtest.Start(t)
	replica := pgtest.StartReplica(t, primary)
	c := newCLI(t)
	c.env["MNEMO_DB"] = primary.DSN("postgres") + "&schema=rep&synchronous_commit=on"
	url, _ := startServe(t, c, "--profile", "p", "--replica", replica.DSN("postgres"))
	httpc := &http.Client{Timeout: 15 * time.Second}
	do := func(path, body, token string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest("POST", url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Mnemo-Consistency", token)
		}
		res, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header.Get("Mnemo-Consistency")
	}
	write := func(word string) (string, string) {
		t.Helper()
		code, body, token := do("/v1/memories", fmt.Sprintf(`{"content": "note %s"}`, word), "")
		var out struct{ ID string }
		if code != 201 || json.Unmarshal([]byte(body), &out) != nil || token == "" {
			t.Fatalf("write: %d %s, token %q", code, body, token)
		}
		return out.ID, token
	}
	recalled := func(word, id, token string) bool {
		t.Helper()
		code, body, _ := do("/v1/recall", fmt.Sprintf(`{"query": %q, "min_relevance": 0, "limit": 3}`, word), token)
		if code != 200 {
			t.Fatalf("recall: %d %s", code, body)
		}
		return strings.Contains(body, id)
	}
	trials := envInt("MNEMO_REPLICA_TRIALS", 200)
	for i := range trials {
		word := fmt.Sprintf("zr%dq", i)
		id, token := write(word)
		if !recalled(word, id, token) {
			t.Fatalf("trial %d: the write is not recalled with its consistency token %s", i, token)
		}
	}
	conn, err := pgx.Connect(t.Context(), replica.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	id, token := write("pausedword")
	if recalled("pausedword", id, "") {
		t.Error("with the replica's replay paused, a recall without a token saw the new write: recalls do not go to the replica")
	}
	if !recalled("pausedword", id, token) {
		t.Error("a recall with the write's token missed it while the replica lagged (the primary should answer it)")
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
}
