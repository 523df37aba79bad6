package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/model"
)

// translateOutput is what `attend translate` writes for the answers: a line per sentence, or Moses's n-best
// lines "sentence ||| translation ||| score".
func translateOutput(results []SentenceResult, nbest bool) string {
	var b strings.Builder
	for i, r := range results {
		if !nbest {
			fmt.Fprintln(&b, r.Translation)
			continue
		}
		for _, h := range r.NBest {
			fmt.Fprintf(&b, "%d ||| %s ||| F0= %.6f ||| %.6f\n", i, h.Translation, h.Score, h.Score)
		}
	}
	return b.String()
}

// TestTranslationsMatchTranslate translates the test file (and a few lines with capitals, punctuation, odd
// spacing and unknown words, and an empty line) with the code of `attend translate` and through the server —
// all lines in one request, and each line in a request of its own, all at once, so that the batcher mixes them
// — and requires the same bytes: the text, the n-best lists with their scores, the token attention `translate
// --attention` writes, and, where white-space words are the tokens, the links `translate --alignments` writes.
// Greedy search, beam search, and beam search with n-best lists and a length penalty.
func TestTranslationsMatchTranslate(t *testing.T) {
	ck, err := model.Load(testModel)
	if err != nil {
		t.Fatal(err)
	}
	plain := readLines(t, "test.src")
	lines := append(append([]string{}, plain...), "", "The Kings, the CAT! zebra", "  the   man\tsaw  ")
	input := strings.Join(lines, "\n") + "\n"
	_, hs := newTestServer(t, "", testOptions(t))
	for _, c := range []struct {
		name   string
		decode app.DecodeOptions
		req    map[string]any
	}{
		{"greedy", app.DecodeOptions{Beam: 1}, map[string]any{"beam": 1}},
		{"beam", app.DecodeOptions{Beam: 4}, map[string]any{"beam": 4}},
		{"n-best", app.DecodeOptions{Beam: 4, NBest: 3, Alpha: 0.6}, map[string]any{"beam": 4, "n_best": 3, "alpha": 0.6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			decode := c.decode
			decode.MaxLen, decode.Batch = ck.Config.Decode.MaxLen, ck.Config.Decode.Batch
			var out, attn, wordAttn, links bytes.Buffer
			if _, err := app.Translate(context.Background(), app.TranslateRequest{Model: ck.Model, TextOptions: app.TextOptions{Lowercase: ck.Config.Data.Lowercase, Decode: decode, TokenLevel: true},
				Input: strings.NewReader(input), InputName: "test", Output: &out, Attention: &attn}); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Translate(context.Background(), app.TranslateRequest{Model: ck.Model, TextOptions: app.TextOptions{Lowercase: ck.Config.Data.Lowercase, Decode: decode},
				Input: strings.NewReader(input), InputName: "test", Output: io.Discard, Attention: &wordAttn, Alignments: &links}); err != nil {
				t.Fatal(err)
			}
			req := map[string]any{"texts": lines, "attention": true, "alignments": true}
			for k, v := range c.req {
				req[k] = v
			}
			whole := translateOK(t, hs.URL, req).Translations
			// Each line alone, all at once.
			single := make([]SentenceResult, len(lines))
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed []string
			for i, line := range lines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					one := map[string]any{"text": line, "attention": true}
					for k, v := range c.req {
						one[k] = v
					}
					body, _ := json.Marshal(one)
					resp, err := http.Post(hs.URL+"/v1/translate", "application/json", bytes.NewReader(body))
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failed = append(failed, err.Error())
						return
					}
					defer resp.Body.Close()
					var tr TranslateResponse
					if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != 200 || len(tr.Translations) != 1 {
						failed = append(failed, fmt.Sprintf("line %d: status %d, %v", i, resp.StatusCode, err))
						return
					}
					single[i] = tr.Translations[0]
				}()
			}
			wg.Wait()
			if len(failed) > 0 {
				t.Fatalf("requests of one line failed: %v", failed)
			}
			nbest := decode.NBest > 0
			for name, results := range map[string][]SentenceResult{"one request": whole, "a request per line": single} {
				if got := translateOutput(results, nbest); got != out.String() {
					t.Fatalf("%s: the server's translations differ from translate's:\nserver:\n%s\ntranslate:\n%s", name, got, out.String())
				}
			}
			// The token attention, as translate --attention writes it.
			sc := bufio.NewScanner(&attn)
			sc.Buffer(nil, 1<<24)
			for i := 0; sc.Scan(); i++ {
				var want struct {
					Source, Output []string
					Attention      [][]float32
				}
				if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
					t.Fatal(err)
				}
				for name, r := range map[string]SentenceResult{"one request": whole[i], "a request per line": single[i]} {
					a := r.Attention
					if a == nil {
						t.Fatalf("%s: line %d has no attention", name, i)
					}
					g, _ := json.Marshal([]any{a.Tokens.Source, a.Tokens.Output[:len(want.Output)], a.Tokens.Weights})
					w, _ := json.Marshal([]any{want.Source, want.Output, want.Attention})
					if !bytes.Equal(g, w) {
						t.Fatalf("%s: line %d: token attention\n%s\ntranslate --attention\n%s", name, i, g, w)
					}
					if extra := a.Tokens.Output[len(want.Output):]; len(want.Attention) > len(want.Output) && (len(extra) != 1 || extra[0] != "</s>") {
						t.Fatalf("%s: line %d: the output tokens end with %q, want one </s> for the attention's last row", name, i, extra)
					}
				}
			}
			// The attention between words and the links, as translate --attention and --alignments write them.
			wsc := bufio.NewScanner(&wordAttn)
			wsc.Buffer(nil, 1<<24)
			for i := 0; wsc.Scan(); i++ {
				var want struct {
					Source, Output []string
					Attention      [][]float32
				}
				if err := json.Unmarshal(wsc.Bytes(), &want); err != nil {
					t.Fatal(err)
				}
				a := whole[i].Attention
				g, _ := json.Marshal([]any{a.Source, a.Output, a.Weights})
				w, _ := json.Marshal([]any{want.Source, want.Output, want.Attention})
				if !bytes.Equal(g, w) {
					t.Fatalf("line %d: word attention\n%s\ntranslate --attention\n%s", i, g, w)
				}
			}
			wantLinks := strings.Split(links.String(), "\n")
			for i := range lines {
				if got := *whole[i].Alignments; got != wantLinks[i] {
					t.Fatalf("line %d %q: links %q, translate --alignments %q", i, lines[i], got, wantLinks[i])
				}
			}
			if nbest {
				for i, r := range whole[:len(plain)] {
					if len(r.NBest) != 3 || r.Score == nil || *r.Score != r.NBest[0].Score || r.Translation != r.NBest[0].Translation {
						t.Fatalf("line %d: n-best %+v with score %v: want 3 hypotheses, the first the translation", i, r.NBest, r.Score)
					}
				}
			}
			if c.name == "greedy" && whole[0].Score != nil {
				t.Fatalf("greedy search gave a score %v", *whole[0].Score)
			}
		})
	}
}

// TestBadRequestsGetJSONErrors sends each kind of bad request and checks its status and that the JSON message
// names what is wrong.
func TestBadRequestsGetJSONErrors(t *testing.T) {
	opts := testOptions(t)
	opts.MaxBody, opts.MaxSentences, opts.MaxSourceLen, opts.Queue = 400, 3, 6, 2
	_, hs := newTestServer(t, "", opts)
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		message                  string
	}{
		{"malformed JSON", "POST", "/v1/translate", `{"text": "the cat"`, 400, "ends in the middle"},
		{"JSON syntax", "POST", "/v1/translate", `{"text" "the cat"}`, 400, "not valid JSON"},
		{"empty body", "POST", "/v1/translate", ``, 400, "empty"},
		{"not an object", "POST", "/v1/translate", `["the cat"]`, 400, "must be a JSON object"},
		{"wrong type", "POST", "/v1/translate", `{"text": "the cat", "beam": "five"}`, 400, `field "beam" must be a whole number`},
		{"fraction", "POST", "/v1/translate", `{"text": "the cat", "beam": 2.5}`, 400, `field "beam" must be a whole number`},
		{"texts of numbers", "POST", "/v1/translate", `{"texts": ["the cat", 3]}`, 400, `field "texts" must be an array of strings`},
		{"unknown field", "POST", "/v1/translate", `{"text": "the cat", "file": "/etc/passwd"}`, 400, `unknown field "file"`},
		{"no text", "POST", "/v1/translate", `{"beam": 2}`, 400, "no text"},
		{"text and texts", "POST", "/v1/translate", `{"text": "a", "texts": ["b"]}`, 400, "both text and texts"},
		{"two objects", "POST", "/v1/translate", `{"text": "a"} {"text": "b"}`, 400, "more after its JSON object"},
		{"beam 0", "POST", "/v1/translate", `{"text": "the cat", "beam": 0}`, 400, "beam is 0"},
		{"n-best over beam", "POST", "/v1/translate", `{"text": "the cat", "beam": 2, "n_best": 3}`, 400, "n_best is 3"},
		{"negative alpha", "POST", "/v1/translate", `{"text": "the cat", "alpha": -1}`, 400, "alpha is -1"},
		{"alpha past the shared range", "POST", "/v1/translate", `{"text": "the cat", "alpha": 10.5}`, 400, decoder.AlphaRange().Check("alpha", 10.5).Error()},
		{"max_len over the server's", "POST", "/v1/translate", fmt.Sprintf(`{"text": "the cat", "max_len": %d}`, opts.Decode.MaxLen+1), 400, "max_len is"},
		{"threshold", "POST", "/v1/translate", `{"text": "the cat", "threshold": 2}`, 400, "threshold is 2"},
		{"format on translate", "POST", "/v1/translate", `{"text": "the cat", "format": "png"}`, 400, "format is for /v1/heatmap"},
		{"body over the limit", "POST", "/v1/translate", `{"text": "` + strings.Repeat("cat ", 120) + `"}`, 413, "over 400 bytes"},
		{"too many sentences", "POST", "/v1/translate", `{"texts": ["a", "b", "c", "d"]}`, 413, "at most 3 per request"},
		{"sentence too long", "POST", "/v1/translate", `{"texts": ["the cat", "the man saw the cat and the dog"]}`, 422, "sentence 1 has 8 tokens; this model reads at most 6"},
		{"invalid UTF-8", "POST", "/v1/translate", "{\"text\": \"the \xff cat\"}", 422, "not valid UTF-8 (byte 0xff at offset 14)"},
		{"queue full", "POST", "/v1/translate", `{"texts": ["a", "b", "c"]}`, 503, "busy"},
		{"heat map of texts", "POST", "/v1/heatmap", `{"texts": ["a"], "format": "png"}`, 400, "one sentence"},
		{"heat map format", "POST", "/v1/heatmap", `{"text": "the cat", "format": "gif"}`, 400, `format is "gif"`},
		{"heat map of nothing", "POST", "/v1/heatmap", `{"text": " ", "format": "png"}`, 422, "no words"},
		{"GET translate", "GET", "/v1/translate", ``, 405, "takes POST"},
		{"unknown endpoint", "GET", "/v1/translations", ``, 404, "no endpoint /v1/translations"},
		{"unknown page", "GET", "/etc/passwd", ``, 404, "no page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body errorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("status %d with a body that is not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.status || body.Status != c.status || !strings.Contains(body.Error, c.message) {
				t.Fatalf("status %d, %+v; want %d and a message with %q", resp.StatusCode, body, c.status, c.message)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
			if c.status == 503 && resp.Header.Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			if c.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Fatalf("405 with Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
}

// TestDeadlinePassedIs504 gives requests 1 µs: each must end with 504 and a message, and the server must go
// on answering.
func TestDeadlinePassedIs504(t *testing.T) {
	opts := testOptions(t)
	opts.Timeout = time.Microsecond
	s, hs := newTestServer(t, "", opts)
	status, _, body := post(t, hs.URL+"/v1/translate", `{"texts": ["the man saw the cat", "some kings heard the wolves"], "beam": 3}`)
	if status != http.StatusGatewayTimeout || !strings.Contains(string(body), "took longer than 1µs") {
		t.Fatalf("%d %s; want 504", status, body)
	}
	// The sentences of the request that gave up are dropped or decoded for nothing; the server stays healthy.
	deadline := time.Now().Add(10 * time.Second)
	for s.batcher.queued() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.batcher.queued(); n > 0 {
		t.Fatalf("%d sentences of an expired request still queued", n)
	}
}

// TestClientGoneIsDroppedFromTheQueue queues jobs of a request that is already gone next to a live one, as the
// batcher's goroutine finds them: the gone ones are dropped (answered with their context's error, counted) and
// never decoded, the live one is taken.
func TestClientGoneIsDroppedFromTheQueue(t *testing.T) {
	zero := func() float64 { return 0 }
	m := newMetrics(zero, zero, zero)
	b := &batcher{limit: 10, metrics: m, wake: make(chan struct{}, 1)} // no goroutine: the test takes by hand
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	var errs []error
	opts := app.DecodeOptions{MaxLen: 5, Batch: 2, Beam: 1}
	mk := func(ctx context.Context, o app.DecodeOptions) *job {
		return &job{ctx: ctx, opts: o, done: func(_ app.Translation, err error) { errs = append(errs, err) }}
	}
	live := mk(context.Background(), opts)
	beam := opts
	beam.Beam = 3
	if !b.submit([]*job{mk(gone, opts), live, mk(gone, opts), mk(context.Background(), beam)}) {
		t.Fatal("queue refused 4 jobs under a limit of 10")
	}
	taken := b.take(opts, -1)
	if len(taken) != 1 || taken[0] != live {
		t.Fatalf("took %d jobs, want the live one", len(taken))
	}
	if len(errs) != 2 || errs[0] != context.Canceled || errs[1] != context.Canceled {
		t.Fatalf("the gone jobs were answered with %v, want two context.Canceled", errs)
	}
	if got := counterValue(t, m, "attend_sentences_dropped_total"); got != 2 {
		t.Fatalf("dropped counter %v, want 2", got)
	}
	// The beam job waits for its turn; greedy takes none while it is the oldest.
	if b.queued() != 1 || len(b.take(opts, -1)) != 0 {
		t.Fatal("the beam job was not left waiting, or greedy took past it")
	}
	if !b.submit(make([]*job, 9)) {
		t.Fatal("the queue refused 9 more jobs under a limit of 10")
	}
	if b.submit(make([]*job, 1)) {
		t.Fatal("the queue took an 11th job under a limit of 10")
	}
}

// counterValue reads a metric from the registry.
func counterValue(t *testing.T, m *metrics, name string) float64 {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestConcurrentRequestsAreDecodedTogether sends 24 one-sentence beam requests at once to a server: every request
// must get its own sentence's translation, and the batch-size histogram must count each sentence once.
func TestConcurrentRequestsAreDecodedTogether(t *testing.T) {
	opts := testOptions(t)
	opts.Wait = 300 * time.Millisecond
	_, hs := newTestServer(t, "", opts)
	lines := readLines(t, "test.src")[:24]
	alone := translateOK(t, hs.URL, map[string]any{"texts": lines, "beam": 2}).Translations
	var wg sync.WaitGroup
	got := make([]string, len(lines))
	for i, line := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"text": line, "beam": 2})
			resp, err := http.Post(hs.URL+"/v1/translate", "application/json", bytes.NewReader(body))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var tr TranslateResponse
			if json.NewDecoder(resp.Body).Decode(&tr) == nil && len(tr.Translations) == 1 {
				got[i] = tr.Translations[0].Translation
			}
		}()
	}
	wg.Wait()
	for i := range lines {
		if got[i] != alone[i].Translation {
			t.Fatalf("line %d: %q alone in a batch of its request, %q among concurrent requests", i, alone[i].Translation, got[i])
		}
	}
	count, sum := histogram(t, hs.URL, "attend_batch_sentences")
	// Every sentence entered a batch once, and sentences entered together: the first request's 24 in a few
	// blocks. (The single ones join the workers' running batches as they arrive, often one at a time, each
	// worker taking its share of those waiting.)
	if sum != 48 || count >= 48 {
		t.Fatalf("batch sizes: %v sentences in %v batches; want 48 in fewer than 48", sum, count)
	}
}

// TestRequestsOfOtherSettingsShareABatch sends one-sentence beam requests at once, of three settings that share a
// running batch (the same beam width; alpha, n_best, max_len of their own): every answer, score and n-best list
// must be the one the request gets alone.
func TestRequestsOfOtherSettingsShareABatch(t *testing.T) {
	_, hs := newTestServer(t, "", testOptions(t))
	lines := readLines(t, "test.src")[:18]
	settings := []map[string]any{{"beam": 3}, {"beam": 3, "alpha": 0.6, "n_best": 2}, {"beam": 3, "n_best": 3, "max_len": 6}}
	request := func(i int) map[string]any {
		req := map[string]any{"text": lines[i]}
		for k, v := range settings[i%len(settings)] {
			req[k] = v
		}
		return req
	}
	alone := make([]string, len(lines))
	for i := range lines {
		b, _ := json.Marshal(translateOK(t, hs.URL, request(i)))
		alone[i] = string(b)
	}
	got := make([]string, len(lines))
	var wg sync.WaitGroup
	for i := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(request(i))
			resp, err := http.Post(hs.URL+"/v1/translate", "application/json", bytes.NewReader(body))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var tr TranslateResponse
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&tr) == nil {
				b, _ := json.Marshal(tr)
				got[i] = string(b)
			}
		}()
	}
	wg.Wait()
	for i := range lines {
		if got[i] != alone[i] {
			t.Fatalf("line %d with %v: %s alone, %s among concurrent requests", i, settings[i%len(settings)], alone[i], got[i])
		}
	}
}

// histogram reads a histogram's count and sum from /metrics.
func histogram(t *testing.T, url, name string) (count, sum float64) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name+"_count" {
			count, _ = strconv.ParseFloat(f[1], 64)
		}
		if len(f) == 2 && f[0] == name+"_sum" {
			sum, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return count, sum
}

// TestMetricsHealthAndModel checks /metrics (Prometheus text: requests by status, latency, batch sizes, queue
// length, process memory), /healthz and /v1/model.
func TestMetricsHealthAndModel(t *testing.T) {
	_, hs := newTestServer(t, "", testOptions(t))
	translateOK(t, hs.URL, map[string]any{"text": "the man saw the cat"})
	post(t, hs.URL+"/v1/translate", `{"beam": "x"}`)
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	text.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`attend_http_requests_total{code="200",path="/v1/translate"} 1`,
		`attend_http_requests_total{code="400",path="/v1/translate"} 1`,
		`attend_http_request_duration_seconds_bucket{path="/v1/translate",le="+Inf"} 2`,
		`attend_batch_sentences_count 1`,
		`attend_queue_sentences 0`,
		`attend_sentences_translated_total 1`,
		`attend_model_step 60`,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, text.String())
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics Content-Type %q", ct)
	}
	resp, err = http.Get(hs.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if health["status"] != "ok" || health["step"] != 60.0 {
		t.Fatalf("/healthz: %v", health)
	}
	resp, err = http.Get(hs.URL + "/v1/model")
	if err != nil {
		t.Fatal(err)
	}
	var info ModelInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck, _ := model.Load(testModel)
	if info.Checkpoint != "m.ckpt" || info.Step != 60 || info.Vocabulary.Source != ck.Model.SrcVocab.Size() ||
		info.Vocabulary.Target != ck.Model.TgtVocab.Size() || info.Config["model"].(map[string]any)["emb"] != 16.0 ||
		info.Defaults.Beam != 5 || info.Limits.MaxSentences != DefaultMaxSentences || !info.Capabilities.Shortlist {
		t.Fatalf("/v1/model: %+v", info)
	}
}

// TestHeatmapDownloadsAreWhatHeatmapWrites asks /v1/heatmap for the JSON, PNG and SVG of a sentence: the JSON
// must be byte for byte what `attend heatmap --text … --out x.json` writes (greedy, the checkpoint named by its
// file name), the PNG must decode, the SVG be an SVG.
func TestHeatmapDownloadsAreWhatHeatmapWrites(t *testing.T) {
	_, hs := newTestServer(t, "", testOptions(t))
	ck, err := model.Load(testModel)
	if err != nil {
		t.Fatal(err)
	}
	text := "the small farmer saw some kings"
	maps, err := app.Heatmaps(context.Background(), app.HeatmapRequest{Model: ck, ModelPath: "m.ckpt",
		Sources: [][]string{ck.Config.Data.Tokenizer().Tokenize(text)}, Decode: app.DecodeOptions{MaxLen: ck.Config.Decode.MaxLen, Batch: ck.Config.Decode.Batch}})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := heatmap.WriteJSON(&want, maps[0]); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "png", "svg"} {
		status, header, body := post(t, hs.URL+"/v1/heatmap", fmt.Sprintf(`{"text": %q, "format": %q, "beam": 1}`, text, format))
		if status != 200 || !strings.Contains(header.Get("Content-Disposition"), "attention."+format) {
			t.Fatalf("%s: %d %s (%v)", format, status, body, header)
		}
		switch format {
		case "json":
			if !bytes.Equal(body, want.Bytes()) {
				t.Fatalf("the server's JSON\n%s\nattend heatmap's\n%s", body, want.Bytes())
			}
		case "png":
			if _, err := png.Decode(bytes.NewReader(body)); err != nil {
				t.Fatalf("the PNG does not decode: %v", err)
			}
		case "svg":
			if !bytes.Contains(body, []byte("<svg")) || header.Get("Content-Type") != "image/svg+xml" {
				t.Fatalf("not an SVG: %s…", body[:min(len(body), 100)])
			}
		}
	}
}

// TestPageAndCORS serves the page and its files with a content security policy, sends CORS headers only for
// the origin given, and answers a preflight.
func TestPageAndCORS(t *testing.T) {
	_, hs := newTestServer(t, "", testOptions(t))
	for path, want := range map[string]string{"/": "text/html", "/page.js": "javascript", "/page.css": "text/css"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), want) ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, resp.Header)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatal("CORS header without --cors")
		}
	}
	page, _ := pageFiles.ReadFile("page/index.html")
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).Match(page) {
		t.Fatal("the page loads something from the network")
	}

	opts := testOptions(t)
	opts.CORS = "https://example.org"
	_, cors := newTestServer(t, "", opts)
	req, _ := http.NewRequest(http.MethodOptions, cors.URL+"/v1/translate", nil)
	req.Header.Set("Origin", "https://example.org")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://example.org" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	_, header, _ := post(t, cors.URL+"/v1/translate", `{"text": "the cat"}`)
	if header.Get("Access-Control-Allow-Origin") != "https://example.org" {
		t.Fatalf("no CORS header on the answer: %v", header)
	}
}

// TestReloadKeepsServingAndSwapsTheModel reloads a broken file (the old model keeps serving and the error says
// why), then the checkpoint of step 60 over that of step 30 while requests are in flight: none fails, and
// later answers come from the new model.
func TestReloadKeepsServingAndSwapsTheModel(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/live.ckpt"
	copyFile(t, testStep1, path)
	s, hs := newTestServer(t, path, testOptions(t))
	if s.Step() != 30 {
		t.Fatalf("serving step %d, want 30", s.Step())
	}
	writeFile(t, path, []byte("not a checkpoint"))
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "still serving step 30") {
		t.Fatalf("reload of a broken file: %v", err)
	}
	translateOK(t, hs.URL, map[string]any{"text": "the man saw the cat"})

	copyFile(t, testModel, path)
	stop := make(chan struct{})
	var failures []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"text": "the farmer heard %d wolves", "beam": %d}`, i, 1+w%2)
				resp, err := http.Post(hs.URL+"/v1/translate", "application/json", strings.NewReader(body))
				if err == nil {
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					failures = append(failures, fmt.Sprint(err, resp))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed around the reload: %v", len(failures), failures[0])
	}
	resp, err := http.Get(hs.URL + "/v1/model")
	if err != nil {
		t.Fatal(err)
	}
	var info ModelInfo
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info.Step != 60 {
		t.Fatalf("after the reload /v1/model says step %d, want 60", info.Step)
	}
}

// TestServeFinishesRequestsInFlightOnShutdown cancels Serve's context while a request waits in the batcher
// (beam search gathering for 500 ms): the request must still get its translation, Serve must return nil, and
// the address must then refuse connections.
func TestServeFinishesRequestsInFlightOnShutdown(t *testing.T) {
	opts := testOptions(t)
	opts.Wait = 500 * time.Millisecond
	s, err := New(testModel, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()
	answered := make(chan int, 1)
	go func() {
		status, _, _ := post(t, url+"/v1/translate", `{"text": "the man saw the cat", "beam": 3}`)
		answered <- status
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.inFlight.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if status := <-answered; status != http.StatusOK {
		t.Fatalf("the request in flight got %d", status)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("the server still answers after shutting down")
	}
}

// TestFullContextModelLinksByItsAlignmentAttention serves a model with full-context alignment: its links and the
// attention beside them are those of its alignment attention, as translate --alignments writes them, in greedy
// and beam search alike, and not those of the decoder's attention.
func TestFullContextModelLinksByItsAlignmentAttention(t *testing.T) {
	ck, err := model.Load(testModel)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ck.Config
	cfg.Model.FullContextAlignment, cfg.Train.GuidedAlignment = true, "auto"
	m, err := model.New[float32](cfg.Model, ck.Model.SrcVocab, ck.Model.TgtVocab)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 0))
	m.Init(rng)
	for _, w := range ck.Model.Params.List() { // the trained weights, so that translations end
		copy(m.Params.Get(w.Name).Data, w.Data)
	}
	for i := range m.Decoder.AlignW.Data { // an alignment attention far from the decoder's
		m.Decoder.AlignW.Data[i] = float32(4*rng.Float64() - 2)
	}
	path := filepath.Join(t.TempDir(), "fca.ckpt")
	if err := model.Save(path, cfg, m, model.NewAdam(m.Params, 1e-3), model.Progress{}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, "test.src")
	input := strings.Join(lines, "\n") + "\n"
	opts := testOptions(t)
	_, hs := newTestServer(t, path, opts)
	for _, beam := range []int{1, 4} {
		t.Run(fmt.Sprintf("beam=%d", beam), func(t *testing.T) {
			links := func(alignment bool) []string {
				decode := opts.Decode
				decode.Beam, decode.Alignment = beam, alignment
				var out bytes.Buffer
				if _, err := app.Translate(context.Background(), app.TranslateRequest{Model: m, TextOptions: app.TextOptions{Lowercase: cfg.Data.Lowercase, Decode: decode},
					Input: strings.NewReader(input), InputName: "test", Output: io.Discard, Alignments: &out}); err != nil {
					t.Fatal(err)
				}
				return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			}
			want, decoderLinks := links(true), links(false)
			got := translateOK(t, hs.URL, map[string]any{"texts": lines, "beam": beam, "alignments": true}).Translations
			differ := 0
			for i := range lines {
				if *got[i].Alignments != want[i] {
					t.Fatalf("line %d %q: links %q, translate --alignments %q", i, lines[i], *got[i].Alignments, want[i])
				}
				if want[i] != decoderLinks[i] {
					differ++
				}
			}
			if differ == 0 {
				t.Fatal("the alignment attention links every line as the decoder's attention does: the test cannot tell them apart")
			}
		})
	}
}
