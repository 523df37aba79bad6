// Package serve is attend's HTTP server: translation as a JSON API under /v1/ with each sentence's attention
// and word alignments, a page embedded in the binary where you type a sentence and watch the model look,
// /healthz, and Prometheus metrics at /metrics. A batcher decodes the sentences of concurrent requests together
// with the search `attend translate` uses.
package serve

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/model"
)

// Options are the server's settings. Zero values take the defaults named.
type Options struct {
	// Decode holds the search settings of a request that sets none (as translate's flags give them); a
	// request may change beam, n_best, alpha and max_len (up to Decode.MaxLen).
	Decode app.DecodeOptions
	// MaxBody is the most bytes of a request body (default 1 MiB): a larger one is refused with 413.
	MaxBody int64
	// MaxSentences is the most sentences of one request (default 256): more is refused with 413.
	MaxSentences int
	// MaxSourceLen is the most tokens the model may read of one sentence (0: the checkpoint's
	// decode.max_len): a longer sentence is refused with 422.
	MaxSourceLen int
	// Queue is the most sentences waiting for the decoder (default 4096): a request that would pass it is
	// refused with 503 and Retry-After.
	Queue int
	// Timeout is how long a request may wait for its translations (default 30 s): past it, 504.
	Timeout time.Duration
	// Wait is how long requests for the alignment attention of a full-context model, which the running batch
	// does not compute, are gathered before they are decoded together (default 5 ms; greedy and beam search
	// take other sentences into their running batch instead).
	Wait time.Duration
	// CORS are the origins allowed to call the API from a browser, as --cors takes them: "" for none (no CORS
	// headers), "*" for any, or a comma-separated list of origins (scheme://host[:port], http or https).
	CORS string
	// Addr is the address the server listens on (host:port, as --addr; "" is a loopback address). A request's
	// Host header must name it, or be one of AllowedHosts, else 403: for a loopback address localhost,
	// *.localhost or a loopback IP address, for every interface (":PORT", "0.0.0.0:PORT", "[::]:PORT") those
	// and any IP address. /healthz answers whatever the Host.
	Addr string
	// AllowedHosts are more names a request's Host header may give (a comma-separated list of host names or IP
	// addresses, ports ignored, as --allowed-hosts takes them), such as the name a reverse proxy forwards.
	AllowedHosts string
	// Watch are the runs of the watch page at /watch (see WatchRuns); none: no watch page.
	Watch []WatchRun
	// Log gets one line per request and the server's messages (nil: discarded).
	Log io.Writer
}

// Defaults of Options.
const (
	DefaultMaxBody      = 1 << 20
	DefaultMaxSentences = 256
	DefaultQueue        = 4096
	DefaultTimeout      = 30 * time.Second
	DefaultWait         = 5 * time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxSentences <= 0 {
		o.MaxSentences = DefaultMaxSentences
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// loaded is a checkpoint being served.
type loaded struct {
	ck        *model.Checkpoint
	name      string // the checkpoint's file name, which the API shows instead of its path
	tokenizer data.Tokenizer
	id        heatmap.Model
	maxSrc    int // the most tokens of a sentence
	at        time.Time
}

// Server is attend's HTTP server over one checkpoint, which Reload replaces.
type Server struct {
	opts    Options
	path    string
	cur     atomic.Pointer[loaded]
	batcher *batcher
	metrics *metrics
	logger  *log.Logger
	handler http.Handler
	hosts   *hostPolicy
	cors    *corsPolicy
	watch   *watchPage // nil without Options.Watch
	// inFlight counts the requests being answered.
	inFlight atomic.Int64
}

// New returns a server for the checkpoint at path, its batcher running (Serve, or Close, stops it). ck is the
// checkpoint already loaded from path, or nil to load it; Reload reads path again.
func New(path string, ck *model.Checkpoint, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.Decode.Validate(); err != nil {
		return nil, err
	}
	hosts, err := newHostPolicy(opts.Addr, opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	cors, err := newCORSPolicy(opts.CORS)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, path: path, logger: log.New(opts.Log, "", log.LstdFlags), hosts: hosts, cors: cors}
	m, err := s.use(ck)
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	s.metrics = newMetrics(func() float64 { return float64(s.batcher.queued()) },
		func() float64 { return float64(s.cur.Load().ck.Progress.Step) }, func() float64 { return float64(s.inFlight.Load()) })
	s.batcher = newBatcher(s.cur.Load, opts.Queue, opts.Wait, s.metrics, s.logger)
	if len(opts.Watch) > 0 {
		s.watch = newWatchPage(opts.Watch)
	}
	s.handler = s.routes()
	return s, nil
}

// use checks that a checkpoint read from the server's path (nil: read it now) can serve the server's settings
// (app.DecodeOptions.CheckModel, the check translate makes): New refuses to start, and Reload to swap, a model
// that cannot.
func (s *Server) use(ck *model.Checkpoint) (*loaded, error) {
	if ck == nil {
		var err error
		if ck, err = model.Load(s.path); err != nil {
			return nil, err
		}
	}
	if err := s.opts.Decode.CheckModel(s.path, ck.Model); err != nil {
		return nil, err
	}
	name := filepath.Base(s.path)
	m := &loaded{ck: ck, name: name, tokenizer: app.Tokenizer(ck.Model, ck.Config.Data.Lowercase),
		id: app.ModelIdentity(name, ck), maxSrc: s.opts.MaxSourceLen, at: time.Now()}
	if m.maxSrc <= 0 {
		m.maxSrc = ck.Config.Decode.MaxLen
	}
	return m, nil
}

// Reload reads the checkpoint again and serves it from the next batch on; sentences being decoded finish with
// the old model, none is dropped. A checkpoint that does not load, or cannot serve the server's settings (a
// Transformer where --shortlist is given), leaves the old model serving, and the error says why.
func (s *Server) Reload() error {
	m, err := s.use(nil)
	if err != nil {
		s.metrics.reloads.WithLabelValues("failed").Inc()
		return fmt.Errorf("reload: %w; still serving step %d", err, s.cur.Load().ck.Progress.Step)
	}
	s.cur.Store(m)
	s.metrics.reloads.WithLabelValues("ok").Inc()
	return nil
}

// Step is the training step of the model being served.
func (s *Server) Step() int { return s.cur.Load().ck.Progress.Step }

// Serve answers requests on l until ctx is cancelled, then stops accepting, lets the requests in flight
// finish (a request still waits at most the request timeout), stops the batcher and returns nil. The HTTP server
// guards the open network: reading a request's headers may take 10 s and the whole request 30 s, writing the
// response the request timeout and 10 s more, and headers are at most 64 KiB. Serve closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := httpServer(s.handler, s.opts.Timeout+10*time.Second, s.logger)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.logger.Printf("stopping: no new requests; finishing those in flight")
	err := hs.Shutdown(context.Background())
	<-errc // http.ErrServerClosed
	s.Close()
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	s.logger.Printf("stopped")
	return nil
}

// httpServer is the HTTP server of h, with the guards Serve describes; writing a response may take writeTimeout.
func httpServer(h http.Handler, writeTimeout time.Duration, logger *log.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: writeTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: logger}
}

// Close stops the batcher after the batch being decoded; Serve calls it once the HTTP server has shut down. A
// Server made for a test (through its handler) must be closed.
func (s *Server) Close() { s.batcher.close() }
