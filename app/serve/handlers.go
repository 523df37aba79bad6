package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"go.yaml.in/yaml/v3"
)

// TranslateResponse is the answer of POST /v1/translate: one entry per sentence, in order.
type TranslateResponse struct {
	Translations []SentenceResult `json:"translations"`
}

// SentenceResult is one sentence's translation. Score is the hypothesis' score under beam search (its
// log-probability, length-normalised when alpha > 0), absent under greedy search; NBest, when asked for, lists
// the best hypotheses, best first (the first is Translation). Attention and Alignments are there when asked for.
type SentenceResult struct {
	Translation string       `json:"translation"`
	Score       *float64     `json:"score,omitempty"`
	NBest       []Hypothesis `json:"n_best,omitempty"`
	Attention   *Attention   `json:"attention,omitempty"`
	Alignments  *string      `json:"alignments,omitempty"`
}

// Hypothesis is one entry of an n-best list.
type Hypothesis struct {
	Translation string  `json:"translation"`
	Score       float64 `json:"score"`
}

// Attention is a sentence's attention between the white-space words of its input (Source, as written) and of
// its translation (Output, then "</s>" when the model ended the translation): Weights[t][i] is how much output
// word t looked at source word i (a word's column sums its tokens', a word's row averages its tokens'). Tokens
// is the same attention between tokens, as `attend heatmap` draws and exports it, and Entropy that map's mean
// attention entropy in nats, by which `attend heatmap`'s gallery sorts. The words' matrix is embedded, so its
// fields are the object's own in JSON.
type Attention struct {
	TokenMatrix
	Entropy float64     `json:"entropy"`
	Tokens  TokenMatrix `json:"tokens"`
}

// TokenMatrix is one attention matrix with its labels: rows are the output's words or tokens (and </s>),
// columns the source's.
type TokenMatrix struct {
	Source  []string    `json:"source"`
	Output  []string    `json:"output"`
	Weights [][]float32 `json:"weights"`
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// recorder is a ResponseWriter that remembers the status and how many sentences the request carried, for the
// request's log line and metrics.
type recorder struct {
	http.ResponseWriter
	status    int
	sentences int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// statusClientGone is the status logged for a request whose client went away before its answer (nginx's 499).
const statusClientGone = 499

// routes are the server's endpoints, behind logging, metrics and CORS.
func (s *Server) routes() http.Handler {
	page := pageHandler(true, s.watch != nil)
	metricsHandler := s.metrics.handler()
	type route struct {
		method string
		serve  func(*recorder, *http.Request)
	}
	table := map[string]route{
		"/v1/translate": {http.MethodPost, s.translate},
		"/v1/heatmap":   {http.MethodPost, s.heatmap},
		"/v1/model":     {http.MethodGet, s.model},
		"/healthz":      {http.MethodGet, s.healthz},
		"/metrics":      {http.MethodGet, func(w *recorder, r *http.Request) { metricsHandler.ServeHTTP(w, r) }},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		rec := &recorder{ResponseWriter: w}
		label := r.URL.Path
		if s.cors.enabled() {
			if origin := s.cors.allowOrigin(r.Header.Get("Origin")); origin != "" {
				w.Header().Set("Access-Control-Allow-Origin", origin)
			}
			w.Header().Set("Vary", "Origin")
		}
		rt, api := table[r.URL.Path]
		switch {
		case r.URL.Path != "/healthz" && !s.hosts.allows(r.Host):
			// A page that points its own name at this server's address (DNS rebinding) sends that name.
			label = "refused host"
			writeError(rec, s.hosts.refusal(r.Host))
		case api && r.Method == http.MethodOptions && s.cors.enabled():
			w.Header().Set("Access-Control-Allow-Methods", rt.method+", OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
			w.Header().Set("Access-Control-Max-Age", "600")
			rec.WriteHeader(http.StatusNoContent)
		case api && (r.Method == rt.method || rt.method == http.MethodGet && r.Method == http.MethodHead):
			rt.serve(rec, r)
		case api:
			w.Header().Set("Allow", rt.method)
			writeError(rec, errorf(http.StatusMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, rt.method, r.Method))
		case s.watch != nil && isWatchAPI(r.URL.Path):
			label = "/v1/watch"
			s.watch.serveAPI(rec, r)
		case strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1":
			label = "/v1/ unknown" // one label for every unknown path: a label per path would grow without bound
			writeError(rec, errorf(http.StatusNotFound, "no endpoint %s; the API has POST /v1/translate, POST /v1/heatmap and GET /v1/model", logPath(r.URL.Path)))
		default:
			label = "page"
			page.ServeHTTP(rec, r)
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(label, fmt.Sprint(rec.status)).Inc()
		s.metrics.latency.WithLabelValues(label).Observe(elapsed.Seconds())
		s.logger.Printf("%s %s %d %d sentences %.1f ms", r.Method, logPath(r.URL.Path), rec.status, rec.sentences, float64(elapsed.Microseconds())/1000)
	})
}

// logPath is a request's path as the log and messages show it: quoted when it holds what is not printable
// UTF-8 (a decoded %0A would otherwise start a line of its own in the log).
func logPath(p string) string {
	for _, r := range p {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// writeJSON answers v as JSON with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "encode the answer: %v", err))
		return
	}
	writeBody(w, status, "application/json; charset=utf-8", buf.Bytes())
}

// writeBody answers body, of the content type, with the status; no cache keeps it.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	body, _ := json.Marshal(errorBody{Error: e.Message, Status: e.Status})
	w.Header().Set("X-Content-Type-Options", "nosniff")
	writeBody(w, e.Status, "application/json; charset=utf-8", append(body, '\n'))
}

// readRequest checks that a request body is JSON (checkContentType: else 415), reads it up to the limit (past
// it, 413) and decodes it (decodeRequest; heatmap: a request of the heatmap endpoint).
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, heatmap bool) (*TranslateRequest, *apiError) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, errorf(http.StatusRequestEntityTooLarge, "the request body is over %d bytes; send fewer or shorter sentences per request", s.opts.MaxBody)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "read the request body: %v", err)
	}
	return decodeRequest(body, s.limits(), heatmap)
}

// settings are the search settings of a request: the server's, changed by what the request sets.
func (s *Server) settings(req *TranslateRequest) (app.DecodeOptions, *apiError) {
	o := s.opts.Decode
	if req.Beam != nil {
		o.Beam = *req.Beam
		if req.NBest == nil {
			o.NBest = min(o.NBest, o.Beam)
		}
	}
	if req.NBest != nil {
		o.NBest = *req.NBest
	}
	if req.Alpha != nil {
		o.Alpha = *req.Alpha
	}
	if req.MaxLen != nil {
		o.MaxLen = *req.MaxLen
	}
	if o.NBest > max(o.Beam, 1) {
		return o, errorf(http.StatusBadRequest, "n_best is %d but the beam is %d wide; want n_best at most the beam width", o.NBest, max(o.Beam, 1))
	}
	if greedy(o) {
		// Greedy search ignores the penalties: requests that differ only there are decoded together.
		o.Alpha, o.Beta = 0, 0
	}
	if err := o.Validate(); err != nil {
		return o, errorf(http.StatusBadRequest, "%v", err)
	}
	return o, nil
}

// translated is a request's sentences with their translations.
type translated struct {
	model *loaded
	texts []string
	trs   []app.Translation
	opts  app.DecodeOptions
}

// run checks a request's sentences against the model's length limit, queues them and waits for their
// translations, the client going away, or the request's deadline.
func (s *Server) run(w *recorder, r *http.Request, req *TranslateRequest) (*translated, *apiError) {
	opts, aerr := s.settings(req)
	if aerr != nil {
		return nil, aerr
	}
	m := s.cur.Load()
	// A model with full-context alignment links by its alignment attention, as translate --alignments does; the
	// attention returned beside the links is then that attention too.
	opts.Alignment = req.Alignments && m.ck.Model.HasAlignment()
	texts := req.sentences()
	w.sentences = len(texts)
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	out := &translated{model: m, texts: texts, trs: make([]app.Translation, len(texts)), opts: opts}
	var mu sync.Mutex
	left := len(texts)
	var firstErr error
	finished := make(chan struct{})
	if left == 0 {
		close(finished)
	}
	jobs := make([]*job, len(texts))
	for i, text := range texts {
		tokens := m.tokenizer.Tokenize(text)
		if n := app.SourceLength(m.ck.Model, tokens); n > m.maxSrc {
			which := ""
			if req.Texts != nil {
				which = fmt.Sprintf(" %d", i)
			}
			return nil, errorf(http.StatusUnprocessableEntity, "sentence%s has %d tokens; this model reads at most %d (split it, or start the server with a larger --max-source-len)", which, n, m.maxSrc)
		}
		jobs[i] = &job{ctx: ctx, text: text, tokens: tokens, model: m, opts: opts, done: func(tr app.Translation, err error) {
			mu.Lock()
			defer mu.Unlock()
			out.trs[i] = tr
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if left--; left == 0 {
				close(finished)
			}
		}}
	}
	if !s.batcher.submit(jobs) {
		return nil, errorf(http.StatusServiceUnavailable, "the server is busy: %d sentences are waiting; try again in a second", s.batcher.queued())
	}
	select {
	case <-finished:
	case <-ctx.Done():
		if r.Context().Err() != nil {
			w.status = statusClientGone
			return nil, nil
		}
		return nil, errorf(http.StatusGatewayTimeout, "the translation took longer than %v; send fewer sentences per request, or try later", s.opts.Timeout)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		if errors.Is(firstErr, errShuttingDown) {
			return nil, errorf(http.StatusServiceUnavailable, "%v", firstErr)
		}
		return nil, errorf(http.StatusInternalServerError, "%v", firstErr)
	}
	return out, nil
}

// answer reads a request (readRequest; heatmap: of the heatmap endpoint) and translates it (run). It returns nil
// when the request has been answered already: with an error, or not at all when the client went away.
func (s *Server) answer(w *recorder, r *http.Request, heatmap bool) (*TranslateRequest, *translated) {
	req, aerr := s.readRequest(w, r, heatmap)
	if aerr == nil && heatmap && len(s.cur.Load().tokenizer.Tokenize(*req.Text)) == 0 {
		aerr = errorf(http.StatusUnprocessableEntity, "the text has no words to draw")
	}
	var done *translated
	if aerr == nil {
		done, aerr = s.run(w, r, req)
	}
	if aerr != nil {
		writeError(w, aerr)
		return nil, nil
	}
	return req, done
}

func (s *Server) translate(w *recorder, r *http.Request) {
	req, done := s.answer(w, r, false)
	if done == nil {
		return
	}
	threshold := 0.0
	if req.Threshold != nil {
		threshold = *req.Threshold
	}
	resp := TranslateResponse{Translations: make([]SentenceResult, len(done.trs))}
	for i, tr := range done.trs {
		resp.Translations[i] = done.result(i, tr, req.Attention, req.Alignments, threshold)
	}
	writeJSON(w, http.StatusOK, resp)
}

// result is the answer for sentence i.
func (t *translated) result(i int, tr app.Translation, attention, alignments bool, threshold float64) SentenceResult {
	v := newWordView(t.model.tokenizer, t.texts[i], tr)
	res := SentenceResult{Translation: v.text}
	if !greedy(t.opts) {
		score := tr.Score
		res.Score = &score
	}
	if t.opts.NBest > 0 {
		res.NBest = append(res.NBest, Hypothesis{Translation: v.text, Score: tr.Score})
		for _, alt := range tr.Alternatives {
			res.NBest = append(res.NBest, Hypothesis{Translation: data.Detokenize(alt.Output), Score: alt.Score})
		}
	}
	if attention {
		hm := app.AttentionMap(tr, nil, false, t.model.id)
		a := &Attention{TokenMatrix: TokenMatrix{Source: v.source, Output: v.output, Weights: v.attention(tr)},
			Entropy: hm.MeanEntropy(), Tokens: TokenMatrix{Source: hm.Source, Output: hm.Output, Weights: hm.Weights}}
		if len(hm.Output) > len(tr.Output) {
			a.Output = append(append([]string{}, v.output...), data.EOSToken)
		}
		res.Attention = a
	}
	if alignments {
		links := align.FormatPharaoh(v.links(tr, threshold), false)
		res.Alignments = &links
	}
	return res
}

func (s *Server) limits() limits {
	return limits{maxSentences: s.opts.MaxSentences, maxLen: s.opts.Decode.MaxLen}
}

// heatmap answers the picture or matrix `attend heatmap` writes for one sentence, translated with the
// request's settings.
func (s *Server) heatmap(w *recorder, r *http.Request) {
	req, done := s.answer(w, r, true)
	if done == nil {
		return
	}
	hm := app.AttentionMap(done.trs[0], nil, false, done.model.id)
	var buf bytes.Buffer
	var err error
	contentType := ""
	switch req.Format {
	case "png":
		err, contentType = heatmap.WritePNG(&buf, hm), "image/png"
	case "svg":
		err, contentType = heatmap.WriteSVG(&buf, hm), "image/svg+xml"
	default:
		err, contentType = heatmap.WriteJSON(&buf, hm), "application/json; charset=utf-8"
	}
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "draw the heat map: %v", err))
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"attention.%s\"", req.Format))
	writeBody(w, http.StatusOK, contentType, buf.Bytes())
}

// ModelInfo is the answer of GET /v1/model.
type ModelInfo struct {
	Checkpoint  string         `json:"checkpoint"` // its file name
	Step        int            `json:"step"`
	Epoch       int            `json:"epoch"`
	Description string         `json:"description"`
	Config      map[string]any `json:"config"` // as the YAML config files spell it
	Vocabulary  struct {
		Source int `json:"source"`
		Target int `json:"target"`
	} `json:"vocabulary"`
	Subwords     bool `json:"subwords"`  // the model splits words into subwords itself
	Lowercase    bool `json:"lowercase"` // it reads lowercased text and writes lowercase
	Capabilities struct {
		Attention string `json:"attention"` // the score function
		Heads     int    `json:"heads"`
		Beam      bool   `json:"beam"`
		NBest     bool   `json:"n_best"`
		Shortlist bool   `json:"shortlist"` // the checkpoint has a lexicon
	} `json:"capabilities"`
	Defaults struct {
		Beam   int     `json:"beam"`
		NBest  int     `json:"n_best"`
		Alpha  float64 `json:"alpha"`
		MaxLen int     `json:"max_len"`
	} `json:"defaults"`
	Limits struct {
		MaxBodyBytes    int64   `json:"max_body_bytes"`
		MaxSentences    int     `json:"max_sentences"`
		MaxSourceTokens int     `json:"max_source_tokens"`
		MaxBeam         int     `json:"max_beam"`
		MaxLen          int     `json:"max_len"`
		TimeoutSeconds  float64 `json:"timeout_seconds"`
	} `json:"limits"`
	Loaded time.Time `json:"loaded"`
}

func (s *Server) model(w *recorder, _ *http.Request) {
	m := s.cur.Load()
	ck := m.ck
	info := ModelInfo{Checkpoint: m.name, Step: ck.Progress.Step, Epoch: ck.Progress.Epoch, Description: ck.Model.Describe(),
		Subwords: ck.Model.Subwords != nil, Lowercase: ck.Config.Data.Lowercase, Loaded: m.at.UTC().Truncate(time.Second)}
	raw, err := yaml.Marshal(ck.Config)
	if err == nil {
		err = yaml.Unmarshal(raw, &info.Config)
	}
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "describe the config: %v", err))
		return
	}
	info.Vocabulary.Source, info.Vocabulary.Target = ck.Model.SrcVocab.Size(), ck.Model.TgtVocab.Size()
	c := &info.Capabilities
	c.Attention, c.Heads = ck.Model.Attention()
	c.Beam, c.NBest, c.Shortlist = true, true, ck.Model.CanShortlist() && ck.Model.Lexicon != nil
	d := s.opts.Decode
	info.Defaults.Beam, info.Defaults.NBest, info.Defaults.Alpha, info.Defaults.MaxLen = max(d.Beam, 1), d.NBest, d.Alpha, d.MaxLen
	l := &info.Limits
	l.MaxBodyBytes, l.MaxSentences, l.MaxSourceTokens, l.MaxBeam, l.MaxLen, l.TimeoutSeconds = s.opts.MaxBody, s.opts.MaxSentences, m.maxSrc, MaxBeam, d.MaxLen, s.opts.Timeout.Seconds()
	writeJSON(w, http.StatusOK, info)
}

// healthz answers 200 while the server can translate, and 503 when it cannot: the model being served cannot
// search with the server's settings (app.DecodeOptions.CheckModel, which New and Reload make too), or the server
// is shutting down.
func (s *Server) healthz(w *recorder, _ *http.Request) {
	if s.batcher.closed() {
		writeError(w, errorf(http.StatusServiceUnavailable, "%v", errShuttingDown))
		return
	}
	m := s.cur.Load()
	if err := s.opts.Decode.CheckModel(m.name, m.ck.Model); err != nil {
		writeError(w, errorf(http.StatusServiceUnavailable, "the model cannot translate: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "step": s.Step(), "queued": s.batcher.queued()})
}
