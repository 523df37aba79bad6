package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/chromedp/chromedp"
)

// watchFixture writes, in dir, the files of a run NAME.ckpt that validated at each of steps: its metrics log
// (two steps logged per validation, each validation with perplexity and AER) and a record per validation of two
// watched sentences, whose attention turns from uniform to the anti-diagonal as the steps go by (the second
// sentence with an alignment attention too). It returns the run and the records.
func watchFixture(t *testing.T, dir, name string, steps []int) (WatchRun, []app.WatchRecord) {
	t.Helper()
	ckpt := filepath.Join(dir, name+".ckpt")
	var metrics strings.Builder
	var recs []app.WatchRecord
	for k, step := range steps {
		fmt.Fprintf(&metrics, `{"event":"step","step":%d,"epoch":1,"loss":%g,"tok_per_s":%d}`+"\n", step-5, 4.0/float64(k+1), 1000+k)
		fmt.Fprintf(&metrics, `{"event":"step","step":%d,"epoch":1,"loss":%g,"tok_per_s":%d}`+"\n", step, 3.0/float64(k+1), 1100+k)
		fmt.Fprintf(&metrics, `{"event":"valid","step":%d,"epoch":1,"valid_loss":1,"valid_ppl":%g,"valid_aer":%g}`+"\n", step, 30.0/float64(k+1), 0.9/float64(k+1))
		recs = append(recs, watchRecord(step, float64(k+1)/float64(len(steps))))
	}
	writeWatchFiles(t, WatchRun{Checkpoint: ckpt, Metrics: app.MetricsPath(ckpt)}, metrics.String(), recs)
	return WatchRun{Checkpoint: ckpt, Metrics: app.MetricsPath(ckpt)}, recs
}

// writeWatchFiles appends metrics to the run's log and writes its records.
func writeWatchFiles(t *testing.T, run WatchRun, metrics string, recs []app.WatchRecord) {
	t.Helper()
	f, err := os.OpenFile(run.Metrics, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(metrics); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dir := app.WatchDir(run.Checkpoint)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("%d.json", rec.Step)), append(raw, '\n'))
	}
}

// watchRecord is the record of a validation at step where the attention has gone share of the way from
// uniform to the anti-diagonal (the reordering the demo's language needs).
func watchRecord(step int, share float64) app.WatchRecord {
	src := []string{"die", "Katze", "schläft"}
	out := []string{"sleeps", "cat", "the", "</s>"}
	att := make([][]float32, len(out))
	for t := range att {
		att[t] = make([]float32, len(src))
		for i := range src {
			w := (1 - share) / float64(len(src))
			if i == len(src)-1-min(t, len(src)-1) {
				w += share
			}
			att[t][i] = float32(w)
		}
	}
	ppl, aer := 30/share, 0.9*(1-share)
	rec := app.WatchRecord{Step: step, Epoch: 1, ValidPPL: &ppl, ValidAER: &aer}
	for line := 1; line <= 2; line++ {
		s := app.WatchSentence{Map: heatmap.Map{Source: src, Output: out, Reference: []string{"the", "cat", "sleeps"}, Weights: att, Line: line},
			Images: []string{fmt.Sprintf("%d-%d.png", step, line)}}
		if line == 2 {
			s.Alignment = att
		}
		rec.Sentences = append(rec.Sentences, s)
	}
	return rec
}

// startWatch serves the watch page of runs for the test.
func startWatch(t *testing.T, runs []WatchRun) *WatchServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := StartWatch(ctx, "127.0.0.1:0", runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return s
}

func TestWatchAPIServesTheRunsFiles(t *testing.T) {
	dir := t.TempDir()
	run, recs := watchFixture(t, dir, "guided", []int{10, 20, 30})
	empty := WatchRun{Checkpoint: filepath.Join(dir, "later.ckpt"), Metrics: filepath.Join(dir, "later.metrics.jsonl")}
	s := startWatch(t, []WatchRun{run, empty})
	base := strings.TrimSuffix(s.URL, "/watch")

	code, _, body := get(t, base+"/v1/watch")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/watch: %d %s", code, body)
	}
	var list WatchList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Runs) != 2 {
		t.Fatalf("%d runs, want 2: %s", len(list.Runs), body)
	}
	got := list.Runs[0]
	if got.Name != "guided" || !reflect.DeepEqual(got.Steps, []int{10, 20, 30}) || got.Error != "" {
		t.Errorf("run 0: name %q, steps %v, error %q", got.Name, got.Steps, got.Error)
	}
	c := got.Curves
	if len(c.Loss) != 6 || c.Loss[1] != [2]float64{10, 3} || len(c.TokPerS) != 6 || c.TokPerS[5] != [2]float64{30, 1102} {
		t.Errorf("loss %v, tok/s %v", c.Loss, c.TokPerS)
	}
	if len(c.ValidPPL) != 3 || c.ValidPPL[2] != [2]float64{30, 10} || len(c.ValidAER) != 3 || c.ValidAER[0] != [2]float64{10, 0.9} || len(c.ValidBLEU) != 0 {
		t.Errorf("ppl %v, AER %v, BLEU %v", c.ValidPPL, c.ValidAER, c.ValidBLEU)
	}
	if !strings.HasPrefix(got.Title, "guided: 30 steps") {
		t.Errorf("title %q", got.Title)
	}
	if e := list.Runs[1]; e.Name != "later" || len(e.Steps) != 0 || len(e.Curves.Loss) != 0 || e.Error != "" || e.Title != "" {
		t.Errorf("a run without files: %+v", e)
	}
	if !strings.Contains(string(body), `"steps":[]`) || !strings.Contains(string(body), `"loss":[]`) {
		t.Errorf("empty series are not [] in %s", body)
	}

	// A record is the file as the run wrote it.
	code, h, body := get(t, base+"/v1/watch/0/20")
	want, _ := os.ReadFile(filepath.Join(app.WatchDir(run.Checkpoint), "20.json"))
	if code != http.StatusOK || string(body) != string(want) || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("GET /v1/watch/0/20: %d %s, want the file %s", code, body, want)
	}
	var rec app.WatchRecord
	if err := json.Unmarshal(body, &rec); err != nil || !reflect.DeepEqual(rec.Sentences[1].Alignment, recs[1].Sentences[1].Alignment) {
		t.Errorf("record %+v (%v)", rec, err)
	}

	// A step the run is writing: the log's unfinished last line is left for the next read.
	writeWatchFiles(t, run, `{"event":"step","step":35,"epoch":1,"loss":1,"tok_per_s":1200}`+"\n"+`{"event":"valid","st`, nil)
	code, _, body = get(t, base+"/v1/watch")
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Runs[0].Curves.Loss) != 7 || list.Runs[0].Error != "" {
		t.Errorf("with an unfinished line: %d, %d losses, error %q (%v)", code, len(list.Runs[0].Curves.Loss), list.Runs[0].Error, err)
	}

	secret := filepath.Join(dir, "secret.json")
	writeFile(t, secret, []byte(`{"step":1,"secret":true}`))
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/v1/watch/0/25", http.StatusNotFound},        // no validation at that step
		{"/v1/watch/1/10", http.StatusNotFound},        // the run without files
		{"/v1/watch/2/10", http.StatusNotFound},        // no such run
		{"/v1/watch/01/10", http.StatusNotFound},       // a run is named one way
		{"/v1/watch/-1/10", http.StatusNotFound},       //
		{"/v1/watch/0/abc", http.StatusBadRequest},     // not a number
		{"/v1/watch/0/-10", http.StatusBadRequest},     //
		{"/v1/watch/0/+10", http.StatusBadRequest},     //
		{"/v1/watch/0/10.json", http.StatusBadRequest}, //
		{"/v1/watch/0/..", http.StatusBadRequest},      //
		{"/v1/watch/0/%2e%2e%2fsecret", http.StatusNotFound},
		{"/v1/watch/0/..%2F..%2Fsecret", http.StatusNotFound},
		{"/v1/watch/0/../../secret", http.StatusNotFound},
		{"/v1/watch/0", http.StatusNotFound},
		{"/v1/watch/0/10/x", http.StatusNotFound},
		{"/v1/translate", http.StatusNotFound}, // the watch page alone
		{"/guided.watch/10.json", http.StatusNotFound},
		{"/page.js", http.StatusNotFound},
	} {
		code, _, body := getRaw(t, base, tc.path)
		if code != tc.code || strings.Contains(string(body), "secret\":") || !strings.Contains(string(body), `"error"`) {
			t.Errorf("GET %s: %d %s, want %d and an error", tc.path, code, body, tc.code)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/watch", strings.NewReader("{}"))
	if code, h, _ := send(t, http.DefaultClient, req); code != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /v1/watch: %d, Allow %q", code, h.Get("Allow"))
	}
}

// send sends req with client.
func send(t *testing.T, client *http.Client, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := client.Do(req)
	return answer(t, resp, err)
}

// mustRequest is a GET request of url.
func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// getRaw GETs path from base as written, without the client cleaning it.
func getRaw(t *testing.T, base, path string) (int, http.Header, []byte) {
	t.Helper()
	req := mustRequest(t, base)
	req.URL.Opaque = path
	return send(t, http.DefaultClient, req)
}

func TestWatchPageHasServesGuards(t *testing.T) {
	s := startWatch(t, []WatchRun{{Checkpoint: filepath.Join(t.TempDir(), "r.ckpt"), Metrics: "r.metrics.jsonl"}})
	base := strings.TrimSuffix(s.URL, "/watch")
	code, h, body := get(t, s.URL)
	if code != http.StatusOK || !strings.Contains(string(body), "watch.js") || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
		h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET /watch: %d %v %.80s", code, h, body)
	}
	for _, file := range []string{"/watch.js", "/shared.js", "/page.css"} {
		if code, _, _ := get(t, base+file); code != http.StatusOK {
			t.Errorf("GET %s: %d", file, code)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if code, h, _ := send(t, client, mustRequest(t, base+"/")); code != http.StatusFound || h.Get("Location") != "/watch" {
		t.Errorf("GET /: %d to %q, want a redirect to /watch", code, h.Get("Location"))
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/watch", nil)
	req.Host = "attacker.example"
	if code, _, body := send(t, http.DefaultClient, req); code != http.StatusForbidden {
		t.Errorf("Host attacker.example: %d %s, want 403", code, body)
	}
	if _, err := StartWatch(context.Background(), "", nil, nil); err == nil {
		t.Error("an empty address was taken (net.Listen would listen on every interface)")
	}
}

func TestServeAddsTheWatchPage(t *testing.T) {
	dir := t.TempDir()
	run, _ := watchFixture(t, dir, "r", []int{10})
	opts := testOptions(t)
	opts.Watch = []WatchRun{run}
	_, hs := newTestServer(t, "", opts)
	for path, want := range map[string]string{"/": "page.js", "/watch": "watch.js", "/v1/watch": `"steps":[10]`, "/v1/watch/0/10": `"step":10`} {
		if code, _, body := get(t, hs.URL+path); code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.200s, want %s in it", path, code, body, want)
		}
	}
	_, hs = newTestServer(t, "", testOptions(t))
	for _, path := range []string{"/watch", "/v1/watch"} {
		if code, _, _ := get(t, hs.URL+path); code != http.StatusNotFound {
			t.Errorf("without Watch, GET %s: %d, want 404", path, code)
		}
	}
}

func TestWatchRunsTakesCheckpointsAndFoldersAndNamesThem(t *testing.T) {
	dir := t.TempDir()
	watchFixture(t, dir, "a", []int{10})
	writeFile(t, filepath.Join(dir, "b.metrics.jsonl"), nil)
	writeFile(t, filepath.Join(dir, "b.ckpt"), nil)
	writeFile(t, filepath.Join(dir, "notes.txt"), nil)
	runs, err := WatchRuns([]string{filepath.Join(dir, "new.ckpt"), dir, filepath.Join(dir, "a.watch")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, strings.TrimPrefix(r.Checkpoint, dir+"/")+" "+strings.TrimPrefix(r.Metrics, dir+"/"))
	}
	if want := []string{"new.ckpt new.metrics.jsonl", "a.ckpt a.metrics.jsonl", "b.ckpt b.metrics.jsonl"}; !reflect.DeepEqual(names, want) {
		t.Errorf("runs %q, want %q", names, want)
	}
	// Two runs of one name are told apart by their folders.
	p := newWatchPage([]WatchRun{{Checkpoint: "a/m.ckpt"}, {Checkpoint: "b/m.ckpt"}, {Checkpoint: "b/n.ckpt"}})
	if want := []string{"a/m", "b/m", "n"}; !reflect.DeepEqual(p.names, want) {
		t.Errorf("names %q, want %q", p.names, want)
	}
	for _, bad := range []string{filepath.Join(dir, "notes.txt"), t.TempDir(), filepath.Join(dir, "missing")} {
		if _, err := WatchRuns([]string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// watchState is what the watch page shows of its first run.
type watchState struct {
	Points  map[string]int `json:"points"`  // dots of each chart, by series
	Step    string         `json:"step"`    // the step of the records drawn
	Max     string         `json:"max"`     // the slider's last position
	Value   string         `json:"value"`   // and its position
	Maps    int            `json:"maps"`    // heat maps drawn
	Cells   []string       `json:"cells"`   // the first map's cells' colours, row by row
	Want    []string       `json:"want"`    // the colours of the record's weights
	Summary string         `json:"summary"` // the run's summary
}

// readWatch reads the page's state, with want the colours (shared.js) of the weights of the first sentence.
func readWatch(weights [][]float32) chromedp.Action[watchState] {
	w, _ := json.Marshal(weights)
	return chromedp.Evaluate[watchState](fmt.Sprintf(`(() => {
		const run = document.querySelector(".run");
		const points = {};
		run.querySelectorAll("svg.chart").forEach(s => { points[s.dataset.series] = s.querySelectorAll("circle.pt").length; });
		const slider = run.querySelector("input[type=range]");
		return {
			points, step: run.querySelector(".sentences").dataset.step || "", max: slider.max, value: slider.value,
			maps: run.querySelectorAll(".sentences table.heat").length,
			cells: [...run.querySelectorAll(".sentences table.heat")[0].querySelectorAll("td[data-row]")].map(c => c.style.backgroundColor),
			want: %s.flat().map(x => shared.css(shared.rgb(x))),
			summary: run.querySelector(".summary").textContent,
		};
	})()`, w))
}

// TestWatchPageInChromium opens the watch page of a run with three validations and a run without files in
// headless chromium: the curves have a point per validation, the heat maps are the latest record's, moving the
// slider to the first validation draws the first record's weights, and a validation the run writes later shows
// up on the slider (which stays where the user put it) and in the curves; a phone-wide window does not scroll
// sideways.
func TestWatchPageInChromium(t *testing.T) {
	ctx := newBrowser(t, 60*time.Second)
	dir := t.TempDir()
	guided, recs := watchFixture(t, dir, "guided", []int{100, 200, 300})
	s := startWatch(t, []WatchRun{guided, {Checkpoint: filepath.Join(dir, "unguided.ckpt"), Metrics: filepath.Join(dir, "unguided.metrics.jsonl")}})
	do(t, ctx, "open the page", chromedp.Navigate(s.URL),
		chromedp.Poll[chromedp.Void](`document.querySelector(".run .sentences[data-step]") !== null && document.querySelectorAll(".run").length === 2`))
	st := run(t, ctx, "read the page", readWatch(recs[2].Sentences[0].Weights))
	if want := map[string]int{"loss": 0, "valid_ppl": 3, "valid_aer": 3, "tok_per_s": 0}; !reflect.DeepEqual(st.Points, want) {
		t.Errorf("points of the curves %v, want %v (one per validation; no BLEU chart)", st.Points, want)
	}
	if st.Step != "300" || st.Max != "2" || st.Value != "2" || st.Maps != 3 || !strings.HasPrefix(st.Summary, "guided: 300 steps") {
		t.Errorf("at first: records of step %s, slider %s of %s, %d maps, summary %q; want step 300, slider 2 of 2, 3 maps", st.Step, st.Value, st.Max, st.Maps, st.Summary)
	}
	if !reflect.DeepEqual(st.Cells, st.Want) {
		t.Errorf("the heat map's cells %v, want the last record's %v", st.Cells, st.Want)
	}
	do(t, ctx, "move the slider to the first validation",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(".run input[type=range]"); s.value = 0; s.dispatchEvent(new Event("input")); })()`),
		chromedp.Poll[chromedp.Void](`document.querySelector(".run .sentences").dataset.step === "100"`))
	st = run(t, ctx, "read the page", readWatch(recs[0].Sentences[0].Weights))
	if !reflect.DeepEqual(st.Cells, st.Want) || st.Value != "0" {
		t.Errorf("at the first validation, slider %s: cells %v, want the first record's %v", st.Value, st.Cells, st.Want)
	}
	last := run(t, ctx, "read the page", readWatch(recs[2].Sentences[0].Weights))
	if reflect.DeepEqual(last.Cells, last.Want) {
		t.Error("the first and the last record look the same: the test shows nothing")
	}
	if len(run(t, ctx, "read the other run", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".run")[1].querySelectorAll(".hint")].map(e => e.textContent)`))) == 0 {
		t.Error("the run without files says nothing")
	}

	// The run validates once more.
	writeWatchFiles(t, guided, `{"event":"step","step":400,"epoch":2,"loss":0.5,"tok_per_s":1200}`+"\n"+
		`{"event":"valid","step":400,"epoch":2,"valid_loss":1,"valid_ppl":5,"valid_aer":0.1}`+"\n", []app.WatchRecord{watchRecord(400, 1)})
	do(t, ctx, "wait for the new validation", chromedp.Poll[chromedp.Void](`document.querySelector(".run input[type=range]").max === "3"`, chromedp.WithPollingTimeout(10*time.Second)))
	st = run(t, ctx, "read the page", readWatch(recs[0].Sentences[0].Weights))
	if out := run(t, ctx, "read the slider's output", chromedp.Evaluate[string](`document.querySelector(".run output").textContent`)); out != "validation 1 of 4: step 100 · epoch 1 · perplexity 90 · AER 0.6" {
		t.Errorf("the slider says %q", out)
	}
	if st.Points["valid_aer"] != 4 || st.Value != "0" || st.Step != "100" {
		t.Errorf("after a new validation: %d AER points, slider at %s, records of step %s; want 4, 0 and 100", st.Points["valid_aer"], st.Value, st.Step)
	}

	// A phone-wide window: the runs stack, and the page does not scroll sideways (wide heat maps scroll in
	// their own box).
	do(t, ctx, "narrow the window", chromedp.EmulateViewport(360, 800))
	if w := run(t, ctx, "measure", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a window of %d px", w[0], w[1])
	}
}

// TestWatchScreenshots writes screenshots of the watch page of the runs $ATTEND_WATCH_RUNS (checkpoints or
// folders, comma-separated) for the documentation: $ATTEND_WATCH_SCREENSHOT-curves.png of the first run's
// curves and, for each step of $ATTEND_WATCH_STEPS (comma-separated; default: the first, middle and last
// validations), $ATTEND_WATCH_SCREENSHOT-STEP.png of its watched sentences with the slider at that step, in a
// window $ATTEND_WATCH_WIDTH pixels wide (default 1000), and with several runs $ATTEND_WATCH_SCREENSHOT-runs.png
// of them side by side, each at the last of those steps, with its first watched sentence. It is a tool, skipped unless
// $ATTEND_WATCH_SCREENSHOT is set.
func TestWatchScreenshots(t *testing.T) {
	prefix := os.Getenv("ATTEND_WATCH_SCREENSHOT")
	if prefix == "" {
		t.Skip("set ATTEND_WATCH_SCREENSHOT (a path prefix) and ATTEND_WATCH_RUNS to write screenshots of the watch page")
	}
	runs, err := WatchRuns(strings.Split(os.Getenv("ATTEND_WATCH_RUNS"), ","))
	if err != nil {
		t.Fatal(err)
	}
	width := int64(1000)
	if w, err := strconv.Atoi(os.Getenv("ATTEND_WATCH_WIDTH")); err == nil && w > 0 {
		width = int64(w)
	}
	ctx := newBrowser(t, 2*time.Minute)
	s := startWatch(t, runs)
	do(t, ctx, "open the page", chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.URL),
		chromedp.Poll[chromedp.Void](`document.querySelector(".run .sentences[data-step]") !== null`))
	steps := runs[0].info("").Steps
	var want []int
	for _, f := range strings.FieldsFunc(os.Getenv("ATTEND_WATCH_STEPS"), func(r rune) bool { return r == ',' }) {
		step, err := strconv.Atoi(f)
		if err != nil || !slices.Contains(steps, step) {
			t.Fatalf("ATTEND_WATCH_STEPS: %q is not one of the steps %v", f, steps)
		}
		want = append(want, step)
	}
	if want == nil {
		want = []int{steps[0], steps[len(steps)/2], steps[len(steps)-1]}
	}
	shoot := func(sel, path string) {
		shot := run(t, ctx, "screenshot "+sel, chromedp.Screenshot(sel))
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", path, len(shot))
	}
	for _, step := range want {
		do(t, ctx, fmt.Sprintf("move the slider to step %d", step),
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector(".run input[type=range]"); s.value = %d; s.dispatchEvent(new Event("input")); })()`, slices.Index(steps, step))),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(".run .sentences").dataset.step === "%d"`, step)))
		shoot(".run .validation", fmt.Sprintf("%s-%d.png", prefix, step))
	}
	shoot(".run .overview", prefix+"-curves.png")
	if len(runs) > 1 {
		// The runs side by side, every slider at the last step shot, with only the first watched sentence.
		do(t, ctx, "set every run's slider and keep one sentence",
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
				for (const s of document.querySelectorAll(".run input[type=range]")) { s.value = %d; s.dispatchEvent(new Event("input")); }
				document.styleSheets[0].insertRule(".run .sentence:not(:first-child) { display: none }");
			})()`, slices.Index(steps, want[len(want)-1]))),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll(".run .sentences")].every(e => e.dataset.step === "%d")`, want[len(want)-1])))
		shoot("#runs", prefix+"-runs.png")
	}
}
