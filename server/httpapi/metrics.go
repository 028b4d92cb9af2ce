package httpapi

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The Prometheus text exposition format (version 0.0.4) written by hand:
// a few counters and histograms do not justify a client library.

// latencyBuckets are histogram upper bounds in seconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// histogram is a cumulative Prometheus histogram.
type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newHistogram() *histogram { return &histogram{counts: make([]uint64, len(latencyBuckets)+1)} }

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(latencyBuckets, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// series is a metric's label set rendered once, e.g. `route="GET /x"`.
type series = string

// labels renders name/value pairs as a Prometheus label set.
func labels(kv ...string) series {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv[i+1]))
		b.WriteByte('"')
	}
	return b.String()
}

// escapeLabel escapes a label value for the text exposition format. Most
// values (stage, leg and route names) need nothing: they are returned as
// they are, without building a replacer on every request.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// metrics holds the server's series. It is safe for concurrent use.
type metrics struct {
	mu         sync.Mutex
	requests   map[series]uint64     // route, method, code
	latency    map[series]*histogram // route
	stages     map[series]*histogram // stage
	legHits    map[series]uint64     // leg: hits each leg returned
	legResults map[series]uint64     // leg: results the leg contributed to
	recalls    map[series]uint64     // endpoint
	written    uint64
	deleted    uint64
	mcpCalls   map[series]uint64 // tool, outcome
	inflight   atomic.Int64
	started    time.Time
}

func newMetrics() *metrics {
	return &metrics{requests: map[series]uint64{}, latency: map[series]*histogram{}, stages: map[series]*histogram{},
		legHits: map[series]uint64{}, legResults: map[series]uint64{}, recalls: map[series]uint64{},
		mcpCalls: map[series]uint64{}, started: time.Now()}
}

func (m *metrics) request(route, method string, code int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[labels("route", route, "method", method, "code", strconv.Itoa(code))]++
	k := labels("route", route)
	h := m.latency[k]
	if h == nil {
		h = newHistogram()
		m.latency[k] = h
	}
	h.observe(d.Seconds())
}

// recall records one recall: its per-stage timings (milliseconds, as the
// trace reports them), how many hits each leg returned and how many results
// each leg contributed to.
func (m *metrics) recall(endpoint string, timingsMS map[string]float64, legHits, legResults map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recalls[labels("endpoint", endpoint)]++
	for stage, ms := range timingsMS {
		k := labels("stage", stage)
		h := m.stages[k]
		if h == nil {
			h = newHistogram()
			m.stages[k] = h
		}
		h.observe(ms / 1000)
	}
	for leg, n := range legHits {
		m.legHits[labels("leg", leg)] += uint64(n)
	}
	for leg, n := range legResults {
		m.legResults[labels("leg", leg)] += uint64(n)
	}
}

func (m *metrics) wrote(n int) {
	m.mu.Lock()
	m.written += uint64(n)
	m.mu.Unlock()
}

func (m *metrics) forgot() {
	m.mu.Lock()
	m.deleted++
	m.mu.Unlock()
}

func (m *metrics) mcpCall(tool string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.mu.Lock()
	m.mcpCalls[labels("tool", tool, "outcome", outcome)]++
	m.mu.Unlock()
}

// gauges are values read at scrape time.
type gauges struct {
	memories int
	keys     int
	ready    bool
}

// write renders every series in the text format, series sorted so the
// output is stable.
func (m *metrics) write(w io.Writer, g gauges) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	counter := func(name, help string, vals map[series]uint64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, k := range sortedKeys(vals) {
			fmt.Fprintf(&b, "%s{%s} %d\n", name, k, vals[k])
		}
	}
	hist := func(name, help string, hs map[series]*histogram) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		for _, k := range sortedKeys(hs) {
			h := hs[k]
			var cum uint64
			for i, c := range h.counts {
				cum += c
				le := "+Inf"
				if i < len(latencyBuckets) {
					le = strconv.FormatFloat(latencyBuckets[i], 'g', -1, 64)
				}
				fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %d\n", name, k, le, cum)
			}
			fmt.Fprintf(&b, "%s_sum{%s} %s\n%s_count{%s} %d\n", name, k, formatFloat(h.sum), name, k, h.n)
		}
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, formatFloat(v))
	}
	counter("mnemo_http_requests_total", "HTTP requests by route, method and status code.", m.requests)
	hist("mnemo_http_request_duration_seconds", "HTTP request latency by route.", m.latency)
	gauge("mnemo_http_requests_in_flight", "HTTP requests being served.", float64(m.inflight.Load()))
	counter("mnemo_recalls_total", "Recalls by endpoint (recall, search_lexical, search_dense).", m.recalls)
	hist("mnemo_recall_stage_duration_seconds", "Recall latency per pipeline stage (total is the whole recall).", m.stages)
	counter("mnemo_recall_leg_hits_total", "Candidates each retrieval leg returned, summed over recalls.", m.legHits)
	counter("mnemo_recall_leg_results_total", "Returned results each leg contributed to, summed over recalls.", m.legResults)
	fmt.Fprintf(&b, "# HELP mnemo_memories_written_total Memories stored through the API.\n# TYPE mnemo_memories_written_total counter\nmnemo_memories_written_total %d\n", m.written)
	fmt.Fprintf(&b, "# HELP mnemo_memories_deleted_total Memories deleted through the API.\n# TYPE mnemo_memories_deleted_total counter\nmnemo_memories_deleted_total %d\n", m.deleted)
	counter("mnemo_mcp_tool_calls_total", "MCP tool calls by tool and outcome.", m.mcpCalls)
	gauge("mnemo_memories", "Memories stored in the profiles this server serves.", float64(g.memories))
	gauge("mnemo_api_keys", "Active API keys.", float64(g.keys))
	ready := 0.0
	if g.ready {
		ready = 1
	}
	gauge("mnemo_ready", "1 when the server accepts requests, 0 while starting or draining.", ready)
	gauge("mnemo_uptime_seconds", "Seconds since the server started.", time.Since(m.started).Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys[V any](m map[series]V) []series {
	ks := make([]series, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
