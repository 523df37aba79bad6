package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/curves"
	"gonum.org/v1/plot/plotter"
)

// The watch page shows how runs learn, from the files they write (app.WatchRecord): their curves as the
// metrics log gives them, and the watched sentences' attention at every validation. Its API:
//
//	GET /v1/watch             the runs (numbered from 0), each with its curves and the steps of its records
//	GET /v1/watch/RUN/STEP    the record RUN wrote at the validation of step STEP (NAME.watch/STEP.json)
//
// Both read the files afresh at each request: a run writes them while it trains (a record at once, by rename).

// WatchRun is a run the watch page shows: the checkpoint path it writes (NAME.ckpt, which need not exist yet;
// its records are in app.WatchDir of it) and its metrics log.
type WatchRun struct {
	Checkpoint string
	Metrics    string // default: app.MetricsPath of Checkpoint
}

// WatchRuns are the runs of paths, as `attend watch` takes them: a checkpoint (NAME.ckpt, or its watch folder
// NAME.watch) is one run with its metrics log beside it; a folder holds a run for each NAME.metrics.jsonl or
// NAME.watch in it. A run named twice is shown once.
func WatchRuns(paths []string) ([]WatchRun, error) {
	var runs []WatchRun
	add := func(ckpt string) {
		if !slices.ContainsFunc(runs, func(r WatchRun) bool { return r.Checkpoint == ckpt }) {
			runs = append(runs, WatchRun{Checkpoint: ckpt, Metrics: app.MetricsPath(ckpt)})
		}
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		switch {
		case strings.HasSuffix(p, ".ckpt"):
			add(p)
			continue
		case strings.HasSuffix(p, ".watch"):
			add(strings.TrimSuffix(p, ".watch") + ".ckpt")
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("watch %s: want a checkpoint (NAME.ckpt) or a folder of runs: %w", p, err)
		}
		found := 0
		for _, e := range entries {
			name, metrics := strings.CutSuffix(e.Name(), ".metrics.jsonl")
			if !metrics {
				name, _ = strings.CutSuffix(e.Name(), ".watch")
			}
			if name != e.Name() && name != "" {
				add(filepath.Join(p, name+".ckpt"))
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("watch %s: no run in the folder (no NAME.metrics.jsonl nor NAME.watch); give a checkpoint (NAME.ckpt) to watch a run that has not started", p)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("watch: no run given; give a checkpoint (NAME.ckpt) or a folder of runs")
	}
	return runs, nil
}

// watchPage answers the watch page's API over a list of runs.
type watchPage struct {
	runs  []WatchRun
	names []string // the runs' names on the page
}

// newWatchPage is the page of runs, each named as its checkpoint without ".ckpt", with its folder too where
// two runs would have the same name.
func newWatchPage(runs []WatchRun) *watchPage {
	p := &watchPage{runs: runs, names: make([]string, len(runs))}
	seen := map[string]int{}
	for i, r := range runs {
		p.names[i] = strings.TrimSuffix(filepath.Base(r.Checkpoint), ".ckpt")
		seen[p.names[i]]++
	}
	for i, r := range runs {
		if seen[p.names[i]] > 1 {
			p.names[i] = filepath.Join(filepath.Base(filepath.Dir(r.Checkpoint)), p.names[i])
		}
	}
	return p
}

// WatchList is the answer of GET /v1/watch.
type WatchList struct {
	Runs []WatchRunInfo `json:"runs"`
}

// WatchRunInfo is one run of GET /v1/watch: its name (the checkpoint's, without ".ckpt"; with its folder,
// "runs/m", where two runs would have the same), its metrics log's
// summary (curves.Curves.Title; "" before the first logged step), its curves, the steps of its records in
// order (GET /v1/watch/RUN/STEP) and, when its files could not be read, why.
type WatchRunInfo struct {
	Name   string      `json:"name"`
	Title  string      `json:"title"`
	Curves WatchCurves `json:"curves"`
	Steps  []int       `json:"steps"`
	Error  string      `json:"error,omitempty"`
}

// WatchCurves are a run's curves (curves.Curves) as [step, value] points, each series empty when the metrics
// log has none of it.
type WatchCurves struct {
	Loss      [][2]float64 `json:"loss"`
	ValidPPL  [][2]float64 `json:"valid_ppl"`
	ValidBLEU [][2]float64 `json:"valid_bleu"`
	ValidAER  [][2]float64 `json:"valid_aer"`
	TokPerS   [][2]float64 `json:"tok_per_s"`
}

// info reads what the run's files hold now; name is its name on the page.
func (r WatchRun) info(name string) WatchRunInfo {
	info := WatchRunInfo{Name: name, Steps: []int{}}
	c, err := readCurves(r.Metrics)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if c != nil {
		info.Title = c.Title(info.Name)
	} else {
		c = &curves.Curves{}
	}
	info.Curves = WatchCurves{Loss: points(c.Loss), ValidPPL: points(c.ValidPPL), ValidBLEU: points(c.ValidBLEU),
		ValidAER: points(c.ValidAER), TokPerS: points(c.TokPerS)}
	if steps, err := app.WatchSteps(app.WatchDir(r.Checkpoint)); err != nil {
		errs = append(errs, err)
	} else if steps != nil {
		info.Steps = steps
	}
	if err := errors.Join(errs...); err != nil {
		info.Error = err.Error()
	}
	return info
}

// readCurves reads the metrics log at path as far as its last complete line (the run may be writing the
// next); nil, and no error, when there is no log or no step in it yet.
func readCurves(path string) (*curves.Curves, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	c, err := curves.Read(bytes.NewReader(raw[:bytes.LastIndexByte(raw, '\n')+1]), filepath.Base(path))
	if errors.Is(err, curves.ErrNoSteps) {
		return nil, nil
	}
	return c, err
}

// points are xys as [x, y] pairs.
func points(xys plotter.XYs) [][2]float64 {
	out := make([][2]float64, len(xys))
	for i, p := range xys {
		out[i] = [2]float64{p.X, p.Y}
	}
	return out
}

// isWatchAPI reports whether path is one of the watch API's.
func isWatchAPI(path string) bool {
	return path == "/v1/watch" || strings.HasPrefix(path, "/v1/watch/")
}

// serveAPI answers a GET of the watch API (isWatchAPI).
func (p *watchPage) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, errorf(http.StatusMethodNotAllowed, "%s takes GET, not %s", logPath(r.URL.Path), r.Method))
		return
	}
	if r.URL.Path == "/v1/watch" {
		list := WatchList{Runs: make([]WatchRunInfo, len(p.runs))}
		for i, run := range p.runs {
			list.Runs[i] = run.info(p.names[i])
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/watch/"), "/")
	if len(parts) != 2 {
		writeError(w, errorf(http.StatusNotFound, "no endpoint %s; the watch API has GET /v1/watch (the runs) and GET /v1/watch/RUN/STEP (a record)", logPath(r.URL.Path)))
		return
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 || n >= len(p.runs) || strconv.Itoa(n) != parts[0] {
		writeError(w, errorf(http.StatusNotFound, "no run %q; the runs are numbered from 0 to %d, in the order GET /v1/watch lists them", parts[0], len(p.runs)-1))
		return
	}
	step, err := strconv.Atoi(parts[1])
	if err != nil || step < 0 || strings.Trim(parts[1], "0123456789") != "" {
		writeError(w, errorf(http.StatusBadRequest, "step %q is not a number; want the step of one of the run's validations, as GET /v1/watch lists them in \"steps\"", parts[1]))
		return
	}
	run := p.runs[n]
	raw, err := os.ReadFile(filepath.Join(app.WatchDir(run.Checkpoint), strconv.Itoa(step)+".json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, errorf(http.StatusNotFound, "run %d (%s) has no record of step %d; GET /v1/watch lists the steps it has", n, filepath.Base(run.Checkpoint), step))
	case err != nil:
		writeError(w, errorf(http.StatusInternalServerError, "read the record of step %d of run %d: %v", step, n, err))
	default:
		writeBody(w, http.StatusOK, "application/json; charset=utf-8", raw)
	}
}

// WatchServer serves the watch page alone (`attend watch`, `attend train --watch`): the page at /watch (/
// leads there) and its API, with serve's guards: the Host check of Options.Addr, the page's content security
// policy and the HTTP server's time limits.
type WatchServer struct {
	hs *http.Server
	// URL is the page's address, with the port the server listens on.
	URL string
}

// StartWatch starts serving the watch page of runs on addr (host:port; port 0 picks a free one, ":PORT" is
// every interface), errors going to errLog (nil: discarded), until ctx is done or Stop is called. It returns
// once the server listens.
func StartWatch(ctx context.Context, addr string, runs []WatchRun, errLog io.Writer) (*WatchServer, error) {
	if addr == "" {
		return nil, fmt.Errorf("--watch address is empty; want host:port such as 127.0.0.1:8090")
	}
	hosts, err := newHostPolicy(addr, "")
	if err != nil {
		return nil, err
	}
	if errLog == nil {
		errLog = io.Discard
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("watch page: %w", err)
	}
	if everyInterface(addr) {
		fmt.Fprintf(errLog, "attend: WARNING: the watch page at %s listens on EVERY network interface: anyone who can reach this machine can read the runs' curves and watched sentences; give 127.0.0.1:PORT to keep it local\n", addr)
	}
	p := newWatchPage(runs)
	page := pageHandler(false, true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !hosts.allows(r.Host):
			writeError(w, hosts.refusal(r.Host))
		case isWatchAPI(r.URL.Path):
			p.serveAPI(w, r)
		case strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1":
			writeError(w, errorf(http.StatusNotFound, "no endpoint %s; the watch API has GET /v1/watch and GET /v1/watch/RUN/STEP", logPath(r.URL.Path)))
		default:
			page.ServeHTTP(w, r)
		}
	})
	s := &WatchServer{hs: httpServer(h, 10*time.Second, log.New(errLog, "watch page: ", log.LstdFlags)),
		URL: "http://" + l.Addr().String() + "/watch"}
	go s.hs.Serve(l) //nolint:errcheck // http.ErrServerClosed, once stopped
	go func() {
		<-ctx.Done()
		s.Stop()
	}()
	return s, nil
}

// Stop stops the server: requests being answered may finish within a second.
func (s *WatchServer) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.hs.Shutdown(ctx); err != nil {
		s.hs.Close()
	}
}
