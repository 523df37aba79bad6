package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/attend-nmt/attend/app/serve"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

// serveOptions is everything `attend serve` reads from its command line.
type serveOptions struct {
	model, addr, cors string
	maxBody           int64
	maxSentences      int
	maxSourceLen      int
	queue             int
	timeout, wait     time.Duration
	decode            decodeFlags
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve --model CKPT [--addr 127.0.0.1:8080]",
		Short: "Translate over HTTP: a JSON API, and a page where you watch the model look",
		Long: `Serve translates over HTTP with a trained model, on localhost unless --addr says otherwise, and prints the
URL of its page: type a sentence, see the translation and its attention as a heat map; point at (or tab to) a
word to light the words it looked at; switch between greedy and beam search; paste or read several lines and
browse them as a gallery sorted by attention entropy; download the PNG, SVG or JSON that attend heatmap writes.

The API (JSON, versioned under /v1/):
  POST /v1/translate  {"text": "..."} or {"texts": ["...", ...]}, optional "beam", "n_best", "alpha",
                      "max_len", "attention": true, "alignments": true, "threshold"
                      → {"translations": [{"translation", "score", "n_best", "attention", "alignments"}, ...]}
  POST /v1/heatmap    {"text": "...", "format": "png"|"svg"|"json", search settings} → the heat map file
  GET  /v1/model      the checkpoint: config, vocabulary sizes, step, what it can do, the server's limits
  GET  /healthz       {"status": "ok"}
  GET  /metrics       Prometheus metrics: requests by status, latency, batch sizes, queue length, memory

Translations are those of attend translate with the same settings (the search flags below are the defaults
of a request). Attention and alignments are given between the white-space words of the input and of the
translation: a word's column sums its tokens' columns, a word's row averages its tokens' rows, and two words
are linked when any of their tokens are; "attention" also holds the token matrix that attend heatmap draws.

Sentences of concurrent requests are decoded together: greedy search takes each new sentence into the running
batch at its first free row, beam search gathers sentences for --wait. Errors are JSON with a message: 400 a
malformed request, 413 a body over --max-body or more than --max-sentences sentences, 422 a sentence over
--max-source-len tokens or invalid UTF-8, 503 (with Retry-After) when --queue sentences wait, 504 past
--timeout.

SIGINT or SIGTERM stops accepting requests, finishes those in flight and exits 0 (a second one quits at once,
status 130 or 143); SIGHUP reloads the checkpoint from --model without dropping a request, and a file that
does not load leaves the old model serving (the log says why).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.model, "model", "", "checkpoint to serve (required)")
	fl.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fl.StringVar(&o.cors, "cors", "", "let pages from this origin call the API (e.g. https://example.org); default: no CORS")
	fl.Int64Var(&o.maxBody, "max-body", serve.DefaultMaxBody, "largest request body in bytes")
	fl.IntVar(&o.maxSentences, "max-sentences", serve.DefaultMaxSentences, "most sentences per request")
	fl.IntVar(&o.maxSourceLen, "max-source-len", 0, "most tokens of a sentence (default: the checkpoint's decode.max_len)")
	fl.IntVar(&o.queue, "queue", serve.DefaultQueue, "most sentences waiting for the decoder before requests get 503")
	fl.DurationVar(&o.timeout, "timeout", serve.DefaultTimeout, "longest a request may wait for its translations (then 504)")
	fl.DurationVar(&o.wait, "wait", serve.DefaultWait, "how long beam search gathers the sentences of concurrent requests")
	o.decode.register(fl)
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

func runServe(cmd *cobra.Command, o serveOptions) error {
	switch {
	case o.maxBody < 1:
		return fmt.Errorf("--max-body is %d; want at least 1 byte", o.maxBody)
	case o.maxSentences < 1:
		return fmt.Errorf("--max-sentences is %d; want at least 1", o.maxSentences)
	case o.maxSourceLen < 0:
		return fmt.Errorf("--max-source-len is %d; want 0 (the checkpoint's decode.max_len) or more", o.maxSourceLen)
	case o.queue < 1:
		return fmt.Errorf("--queue is %d; want at least 1", o.queue)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout is %v; want a positive duration such as 30s", o.timeout)
	case o.wait < 0:
		return fmt.Errorf("--wait is %v; want 0 or a short duration such as 5ms", o.wait)
	}
	ck, err := model.Load(o.model)
	if err != nil {
		return err
	}
	decode, err := o.decode.options(cmd, o.model, ck, nil)
	if err != nil {
		return err
	}
	srv, err := serve.New(o.model, ck, serve.Options{Decode: decode, MaxBody: o.maxBody, MaxSentences: o.maxSentences,
		MaxSourceLen: o.maxSourceLen, Queue: o.queue, Timeout: o.timeout, Wait: o.wait, CORS: o.cors, Log: cmd.ErrOrStderr()})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "attend serve: %s (step %d) on http://%s/ — open it in a browser; Ctrl-C stops\n", o.model, srv.Step(), l.Addr())

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-cmd.Context().Done():
				return
			case <-hup:
			}
			if err := srv.Reload(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "attend serve: SIGHUP: %v\n", err)
				continue
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "attend serve: SIGHUP: reloaded %s (step %d)\n", o.model, srv.Step())
		}
	}()
	return srv.Serve(cmd.Context(), l)
}
