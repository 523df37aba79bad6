package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestLoad attacks a running `attend serve` at $ATTEND_LOAD_URL (on 127.0.0.1 only) with vegeta: one sentence
// per request, the lines of $ATTEND_LOAD_INPUT in turn, for $ATTEND_LOAD_DURATION (default 60s), either as fast
// as $ATTEND_LOAD_CLIENTS concurrent clients (default 64) get their answers, or, with $ATTEND_LOAD_RATE > 0, at
// that many requests per second (open loop, at most that many clients). $ATTEND_LOAD_BEAM is the beam (default
// 1, greedy). It fails on any failed request and prints one line of figures for scripts/serve-load.sh. Skipped
// unless $ATTEND_LOAD_URL is set.
func TestLoad(t *testing.T) {
	target := os.Getenv("ATTEND_LOAD_URL")
	if target == "" {
		t.Skip("set ATTEND_LOAD_URL (see scripts/serve-load.sh) to load a running attend serve")
	}
	u, err := url.Parse(target)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("ATTEND_LOAD_URL %q: the load test targets 127.0.0.1 only", target)
	}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	clients, err1 := strconv.Atoi(env("ATTEND_LOAD_CLIENTS", "64"))
	rate, err2 := strconv.Atoi(env("ATTEND_LOAD_RATE", "0"))
	beam, err3 := strconv.Atoi(env("ATTEND_LOAD_BEAM", "1"))
	duration, err4 := time.ParseDuration(env("ATTEND_LOAD_DURATION", "60s"))
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || clients < 1 || rate < 0 || duration <= 0 || duration > time.Hour {
		t.Fatalf("bad settings: clients %v, rate %v, beam %v, duration %v", err1, err2, err3, err4)
	}
	raw, err := os.ReadFile(os.Getenv("ATTEND_LOAD_INPUT"))
	if err != nil {
		t.Fatalf("ATTEND_LOAD_INPUT: %v", err)
	}
	var targets []vegeta.Target
	header := http.Header{"Content-Type": []string{"application/json"}}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		body, _ := json.Marshal(map[string]any{"text": line, "beam": beam})
		targets = append(targets, vegeta.Target{Method: http.MethodPost, URL: strings.TrimSuffix(target, "/") + "/v1/translate", Body: body, Header: header})
	}
	if len(targets) == 0 {
		t.Fatal("ATTEND_LOAD_INPUT has no sentences")
	}
	attacker := vegeta.NewAttacker(vegeta.Workers(uint64(clients)), vegeta.MaxWorkers(uint64(clients)),
		vegeta.Connections(clients), vegeta.MaxConnections(clients), vegeta.KeepAlive(true), vegeta.Timeout(60*time.Second))
	pacer := vegeta.Rate{Freq: rate, Per: time.Second} // Freq 0: as fast as the clients go
	var m vegeta.Metrics
	for res := range attacker.Attack(vegeta.NewStaticTargeter(targets...), pacer, duration, "attend serve") {
		m.Add(res)
	}
	m.Close()
	failed := m.Requests - uint64(m.StatusCodes["200"])
	mode := "max"
	if rate > 0 {
		mode = strconv.Itoa(rate) + "/s"
	}
	fmt.Printf("LOAD clients=%d rate=%s beam=%d duration=%s requests=%d failed=%d throughput=%.1f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f mean_ms=%.1f\n",
		clients, mode, beam, duration, m.Requests, failed, m.Throughput, ms(m.Latencies.P50), ms(m.Latencies.P90), ms(m.Latencies.P99),
		ms(m.Latencies.Max), ms(m.Latencies.Mean))
	if failed > 0 || len(m.Errors) > 0 {
		t.Fatalf("%d of %d requests failed: status codes %v, errors %v", failed, m.Requests, m.StatusCodes, m.Errors)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
