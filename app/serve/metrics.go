package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own (no global state), exposed at /metrics
// with the Go runtime's and the process's (resident memory, CPU seconds, open files).
type metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec   // by path and status code
	latency   *prometheus.HistogramVec // by path
	batch     prometheus.Histogram     // sentences per block or batch entering the decoder
	sentences prometheus.Counter       // sentences translated
	dropped   prometheus.Counter       // sentences whose request was gone before they were decoded
	reloads   *prometheus.CounterVec   // checkpoint reloads by result
}

func newMetrics(queued, step, inFlight func() float64) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attend_http_requests_total",
			Help: "HTTP requests by path and status code."}, []string{"path", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "attend_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its response, by path.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"path"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attend_batch_sentences",
			Help:    "Sentences of concurrent requests that entered the decoder together.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		sentences: prometheus.NewCounter(prometheus.CounterOpts{Name: "attend_sentences_translated_total",
			Help: "Sentences translated."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "attend_sentences_dropped_total",
			Help: "Sentences dropped from the queue because their client went away or their deadline passed."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attend_model_reloads_total",
			Help: "Checkpoint reloads (SIGHUP) by result: ok or failed (the old model stays)."}, []string{"result"}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.batch, m.sentences, m.dropped, m.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attend_queue_sentences",
			Help: "Sentences waiting for the decoder."}, queued),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attend_http_requests_in_flight",
			Help: "Requests being answered."}, inFlight),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attend_model_step",
			Help: "Training steps of the model being served."}, step),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
