package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/attend-nmt/attend/app/serve"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	var o serve.RunOptions
	var decode decodeFlags
	var watch []string
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
  GET  /healthz       {"status": "ok"}; 503 while the server stops, or if the model cannot serve the flags
  GET  /metrics       Prometheus metrics: requests by status, latency, batch sizes, queue length, memory
  GET  /v1/watch      with --watch: the runs of the watch page at /watch, and GET /v1/watch/RUN/STEP a record
                      (see attend watch)

Translations are those of attend translate with the same settings (the search flags below are the defaults
of a request). Attention and alignments are given between the white-space words of the input and of the
translation: a word's column sums its tokens' columns, a word's row averages its tokens' rows, and two words
are linked when any of their tokens are; "attention" also holds the token matrix that attend heatmap draws.

Requests must name the server in their Host header (else 403, whatever the path but /healthz): for a
loopback --addr (the default) localhost, *.localhost, 127.0.0.1 or [::1], with or without the port; for every
interface (":PORT", "0.0.0.0:PORT", "[::]:PORT", which gets a warning at start) those and any IP address; for
another address that address; and the names --allowed-hosts adds. A web page that points its own name at the
server (DNS rebinding) is thus refused. POST bodies must be sent as Content-Type: application/json (else 415;
curl -H 'Content-Type: application/json'), which a page of another origin cannot send without --cors allowing it.

Sentences of concurrent requests are decoded together: greedy and beam search take each new sentence into the
running batch as soon as it has free rows (a beam search's sentence takes as many rows as its beams); requests
for the alignment attention of a full-context model are gathered for --wait. Errors are JSON with a message: 400 a
malformed request (a key given twice or a NUL character among them), 403 a Host not served, 413 a body over
--max-body or more than --max-sentences sentences, 415 a body not sent as application/json, 422 a sentence
over --max-source-len tokens or invalid UTF-8, 503 (with Retry-After) when --queue sentences wait, 504 past
--timeout.

SIGINT or SIGTERM stops accepting requests, finishes those in flight and exits 0 (a second one quits at once,
status 130 or 143); SIGHUP reloads the checkpoint from --model without dropping a request, and a file that
does not load, or cannot serve with the flags given (a Transformer with --shortlist), leaves the old model
serving (the log says why).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			o.Streams, o.Search, o.Reload = streamsOf(cmd), decode.given(cmd), hup
			if len(watch) > 0 {
				var err error
				if o.Watch, err = serve.WatchRuns(watch); err != nil {
					return err
				}
			}
			return serve.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Model, "model", "", "checkpoint to serve (required)")
	fl.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fl.StringVar(&o.CORS, "cors", "", "let pages from these origins call the API: a comma-separated list of scheme://host[:port] (http or https, no path; e.g. https://example.org,http://localhost:3000), or * for any; null is refused; default: no CORS")
	fl.StringVar(&o.AllowedHosts, "allowed-hosts", "", "more names the Host header of a request may give, comma-separated (e.g. translate.example.org, the name a reverse proxy forwards); default: only the names of --addr")
	fl.Int64Var(&o.MaxBody, "max-body", serve.DefaultMaxBody, "largest request body in bytes")
	fl.IntVar(&o.MaxSentences, "max-sentences", serve.DefaultMaxSentences, "most sentences per request")
	fl.IntVar(&o.MaxSourceLen, "max-source-len", 0, "most tokens of a sentence (default: the checkpoint's decode.max_len)")
	fl.IntVar(&o.Queue, "queue", serve.DefaultQueue, "most sentences waiting for the decoder before requests get 503")
	fl.DurationVar(&o.Timeout, "timeout", serve.DefaultTimeout, "longest a request may wait for its translations (then 504)")
	fl.DurationVar(&o.Wait, "wait", serve.DefaultWait, "how long requests for the alignment attention (of a full-context model) are gathered before they are decoded together")
	fl.StringSliceVar(&watch, "watch", nil, "also serve the watch page of these runs at /watch: checkpoints (NAME.ckpt) or folders of runs, comma-separated or repeated (see attend watch)")
	decode.register(fl)
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
