// Command abrecall compares mnemo builds, or one build under different
// environments, on one database: it starts `BIN serve` for each variant on
// a free 127.0.0.1 port and sends every question of a JSONL file to each
// server in turn as POST /v1/recall, one request at a time, the servers'
// order alternating from question to question, so that the machine's
// drift and noise fall on every variant alike. A pass unscoped is followed
// by one inside a session per question (session 37·j mod --sessions for
// question j, as ../shared/bench/sbs.py scopes them). It prints p50 / p95 /
// mean milliseconds per variant and pass, and the share of questions all
// variants answered with the same ids in the same order.
//
//	go run ./scripts/abrecall --db sbs-10000.db --profile p --queries queries.jsonl --rounds 3 \
//	    before=/tmp/mnemo-before after=bin/mnemo one-cpu=bin/mnemo:GOMAXPROCS=1
//
// Each variant is NAME=BINARY[:VAR=VALUE,...]. The servers read the same
// database, as several processes may; their recalls record accesses, which
// the default weights do not rank by.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

// variant is one server to compare.
type variant struct {
	Name, Bin string
	Env       []string // VAR=VALUE added to the environment
}

// parseVariant reads NAME=BINARY[:VAR=VALUE,...].
func parseVariant(s string) (variant, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return variant{}, fmt.Errorf("variant %q: want NAME=BINARY[:VAR=VALUE,...]", s)
	}
	bin, env, _ := strings.Cut(rest, ":")
	v := variant{Name: name, Bin: bin}
	for kv := range strings.SplitSeq(env, ",") {
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return variant{}, fmt.Errorf("variant %q: environment %q: want VAR=VALUE", s, kv)
		}
		v.Env = append(v.Env, kv)
	}
	return v, nil
}

// target is a running server of a variant.
type target struct {
	Name, URL string
}

// stats are one variant's latencies in one pass.
type stats struct {
	P50, P95, Mean float64 // milliseconds
	N              int
}

func summarize(ms []float64) stats {
	if len(ms) == 0 {
		return stats{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return stats{P50: at(0.5), P95: at(0.95), Mean: sum / float64(len(s)), N: len(s)}
}

// pass is the outcome of one pass over the questions.
type pass struct {
	Name  string
	Stats []stats // by target
	Same  float64 // share of questions answered alike by every target
}

// compare runs rounds+1 passes over questions against targets (the first
// warms and is not timed): unscoped, then, when sessions > 0, each question
// inside its session.
func compare(ctx context.Context, client *http.Client, targets []target, questions []string, rounds, sessions int) ([]pass, error) {
	kinds := []string{"unscoped"}
	if sessions > 0 {
		kinds = append(kinds, "one session")
	}
	var out []pass
	for _, kind := range kinds {
		lat := make([][]float64, len(targets))
		same, asked := 0, 0
		for round := range rounds + 1 {
			for j, q := range questions {
				body := map[string]any{"query": q, "limit": 10}
				if kind != "unscoped" {
					body["sessions"] = []string{strconv.Itoa(j * 37 % sessions)}
				}
				order := make([]int, len(targets))
				for i := range order {
					order[i] = i
				}
				if (j+round)%2 == 1 {
					slices.Reverse(order)
				}
				ids := make([][]string, len(targets))
				for _, i := range order {
					ms, got, err := recall(ctx, client, targets[i].URL, body)
					if err != nil {
						return nil, fmt.Errorf("%s: question %d: %w", targets[i].Name, j+1, err)
					}
					ids[i] = got
					if round > 0 {
						lat[i] = append(lat[i], ms)
					}
				}
				if round > 0 {
					asked++
					if !slices.ContainsFunc(ids, func(x []string) bool { return !slices.Equal(x, ids[0]) }) {
						same++
					}
				}
			}
		}
		p := pass{Name: kind, Same: float64(same) / float64(max(asked, 1))}
		for i := range targets {
			p.Stats = append(p.Stats, summarize(lat[i]))
		}
		out = append(out, p)
	}
	return out, nil
}

// recall sends one recall and returns its latency in milliseconds and the
// ids answered.
func recall(ctx context.Context, client *http.Client, base string, body map[string]any) (float64, []string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/recall", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return 0, nil, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(data))
	}
	var out struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, nil, fmt.Errorf("answer: %w", err)
	}
	ids := make([]string, len(out.Results))
	for i, r := range out.Results {
		ids[i] = r.ID
	}
	return ms, ids, nil
}

// readQuestions reads the "text" (or "query") of each line of a JSONL file.
func readQuestions(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q struct{ Text, Query string }
		if err := json.Unmarshal(line, &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if q.Text == "" {
			q.Text = q.Query
		}
		if q.Text == "" {
			return nil, fmt.Errorf("%s:%d: no text", path, n)
		}
		qs = append(qs, q.Text)
	}
	return qs, sc.Err()
}

// server is a running `mnemo serve`.
type server struct {
	cmd    *exec.Cmd
	url    string
	exited chan error // receives Wait's result
}

// stop interrupts the server and waits for it to exit (it writes its
// index snapshots first).
func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	<-s.exited
}

// start runs `v.Bin serve` on db and waits until it answers /healthz with
// 200, or fails as soon as the process exits.
func start(ctx context.Context, v variant, db, profile string, logs io.Writer) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, v.Bin, "serve", "--db", db, "--addr", addr, "--profile", profile)
	cmd.Env = append(os.Environ(), v.Env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", v.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	url := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	deadline := time.After(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		if err != nil {
			return nil, err
		}
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return &server{cmd: cmd, url: url, exited: exited}, nil
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("%s: the server exited before answering (%v; its output is above)", v.Name, err)
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return nil, ctx.Err()
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("%s: the server did not answer on %s within 30 s", v.Name, addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func main() {
	db := flag.String("db", "", "database file the servers read (required)")
	profile := flag.String("profile", "default", "profile the servers serve (single-user mode)")
	queries := flag.String("queries", "", "JSONL questions, {\"text\": ...} per line (required)")
	rounds := flag.Int("rounds", 3, "timed passes over the questions, after one untimed")
	sessions := flag.Int("sessions", 100, "sessions the scoped pass spreads the questions over (\"0\" … \"N-1\"); 0 skips it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: abrecall --db FILE --queries FILE [--profile P] [--rounds 3] [--sessions 100] NAME=BINARY[:VAR=VALUE,...]...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*db, *profile, *queries, *rounds, *sessions, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "abrecall:", err)
		os.Exit(1)
	}
}

func run(db, profile, queries string, rounds, sessions int, args []string) error {
	if db == "" || queries == "" || len(args) == 0 {
		return errors.New("--db, --queries and at least one variant are required")
	}
	if rounds < 1 || sessions < 0 {
		return fmt.Errorf("--rounds %d, --sessions %d: want at least one round and no negative count of sessions", rounds, sessions)
	}
	var vs []variant
	for _, a := range args {
		v, err := parseVariant(a)
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	qs, err := readQuestions(queries)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var targets []target
	for _, v := range vs {
		srv, err := start(ctx, v, db, profile, os.Stderr)
		if err != nil {
			return err
		}
		defer srv.stop()
		targets = append(targets, target{Name: v.Name, URL: srv.url})
	}
	passes, err := compare(ctx, &http.Client{Timeout: time.Minute}, targets, qs, rounds, sessions)
	if err != nil {
		return err
	}
	for _, p := range passes {
		fmt.Printf("%s (%d questions × %d rounds; the same ids from every variant: %.3f)\n", p.Name, len(qs), rounds, p.Same)
		for i, s := range p.Stats {
			fmt.Printf("  %-12s p50 %.3f  p95 %.3f  mean %.3f ms\n", targets[i].Name, s.P50, s.P95, s.Mean)
		}
	}
	return nil
}
