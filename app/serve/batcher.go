package serve

import (
	"context"
	"fmt"
	"log"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/backend"
)

// job is one sentence of a request, waiting for the decoder or being decoded.
type job struct {
	ctx    context.Context // the request's: a job whose request is gone is dropped before it is decoded
	text   string
	tokens []string // text tokenized by model's tokenizer
	model  *loaded
	opts   app.DecodeOptions // the search: jobs with equal options are decoded together
	done   func(app.Translation, error)
}

// greedy reports whether opts ask for greedy search (app.DecodeOptions' own test, unexported there), and not for
// the alignment attention (DecodeOptions.Alignment).
func greedy(o app.DecodeOptions) bool {
	return o.Beam <= 1 && o.NBest == 0 && o.MaxLenRatio == 0 && !o.Alignment
}

// batcher decodes the sentences of concurrent requests together, on one worker goroutine per core, each with
// matrix products on one thread, as translate decodes a job per core. Sentences of greedy and of beam search go
// through app.TranslateStream, a running batch on the worker's core: the first one starts decoding at once and
// each later one of settings of the same shape (app.StreamShape: the same search and beam width, whatever its
// alpha, n-best and length limit) enters the running batch of a worker with rows free (one, or the beam's
// width), so the batches stay full under load and a sentence's answer leaves as soon as it ends. Sentences that
// ask for the alignment attention, which a stream does not compute, are gathered for up to wait, or until a batch
// per core is full, then decoded together by app.TranslateTokens. Sentences of settings of another shape wait for
// the running batches to drain (they take no new sentences once those wait), so no setting starves another.
//
// A worker per core, rather than one running batch stepped by every core, leaves no core idle while another
// does what a step does on one goroutine (the new sentences' encoder, the batch's reordering): at full load
// with the default preset's model, `BEAM=5 scripts/serve-load.sh` found the server using 1.4 of its 2 cores.
type batcher struct {
	model   func() *loaded // the model to decode with
	limit   int            // the most sentences waiting
	wait    time.Duration
	metrics *metrics
	logger  *log.Logger
	workers int // one per core
	// decoding is the number of sentences in the workers' running batches.
	decoding atomic.Int64

	mu      sync.Mutex
	waiting []*job
	closing bool
	wake    chan struct{} // a job arrived (capacity 1: wakes coalesce)
	quit    chan struct{} // closed by close: the workers stop
	stopped chan struct{} // closed when every worker has returned
}

func newBatcher(model func() *loaded, limit int, wait time.Duration, m *metrics, logger *log.Logger) *batcher {
	b := &batcher{model: model, limit: limit, wait: wait, metrics: m, logger: logger,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	// The workers' searches each want single-threaded products: OpenBLAS's thread count is the process's, and a
	// search that set it for itself would set it back under the other workers' feet.
	backend.SetBLASThreads(1)
	b.workers = runtime.GOMAXPROCS(0)
	var workers sync.WaitGroup
	for range b.workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			b.run()
		}()
	}
	go func() {
		workers.Wait()
		close(b.stopped)
	}()
	return b
}

// submit queues jobs, all or none: false when the queue has no room for them.
func (b *batcher) submit(jobs []*job) bool {
	b.mu.Lock()
	if b.closing || len(b.waiting)+len(jobs) > b.limit {
		b.mu.Unlock()
		return false
	}
	b.waiting = append(b.waiting, jobs...)
	b.mu.Unlock()
	b.nudge()
	return true
}

// nudge wakes a worker waiting for jobs, if one is (wakes coalesce: one is enough until it takes its share).
func (b *batcher) nudge() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// closed reports whether the batcher is closing: it takes no more sentences.
func (b *batcher) closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

// queued is the number of sentences waiting.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// close stops the batcher once the batches being decoded are done; sentences still waiting fail.
func (b *batcher) close() {
	b.mu.Lock()
	if !b.closing {
		b.closing = true
		close(b.quit)
	}
	b.mu.Unlock()
	<-b.stopped
}

// run is a worker: the decoding goroutine of one core.
func (b *batcher) run() {
	for {
		first, closing := b.oldest()
		if closing {
			for _, j := range b.takeAll() {
				j.done(app.Translation{}, errShuttingDown)
			}
			return
		}
		if first == nil {
			select {
			case <-b.wake:
			case <-b.quit:
			}
			continue
		}
		m := b.model()
		if first.opts.Alignment {
			b.gather(m, first.opts)
		} else {
			b.stream(m, first.opts)
		}
	}
}

// errShuttingDown fails the sentences still waiting when the batcher closes.
var errShuttingDown = fmt.Errorf("the server is shutting down")

// oldest is the job waiting longest, after dropping those whose request is gone; nil if none waits.
func (b *batcher) oldest() (*job, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.waiting) > 0 && b.waiting[0].ctx.Err() != nil {
		b.drop(b.waiting[0])
		b.waiting[0] = nil
		b.waiting = b.waiting[1:]
	}
	if len(b.waiting) == 0 {
		return nil, b.closing
	}
	return b.waiting[0], b.closing
}

func (b *batcher) drop(j *job) {
	b.metrics.dropped.Inc()
	j.done(app.Translation{}, j.ctx.Err())
}

func (b *batcher) takeAll() []*job {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.waiting
	b.waiting = nil
	return all
}

// take removes and returns up to most waiting jobs that can be decoded with options opts (batchable), dropping
// those whose request is gone, in order of arrival. It takes none when the oldest job waiting cannot, so that its
// options get their turn.
func (b *batcher) take(opts app.DecodeOptions, most int) []*job {
	taken, _ := b.takeOrYield(opts, most)
	return taken
}

// takeOrYield is take, and whether it took none because the oldest job waiting has other options, decided under
// the same lock: a job of opts that arrives just after take found the queue empty must not look like other
// settings waiting, or a running batch would stop taking sentences and drain for nothing.
func (b *batcher) takeOrYield(opts app.DecodeOptions, most int) ([]*job, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var taken []*job
	kept := b.waiting[:0]
	for i, j := range b.waiting {
		switch {
		case j.ctx.Err() != nil:
			b.drop(j)
		case !batchable(j.opts, opts) || len(taken) == most:
			if len(taken) == 0 && len(kept) == 0 {
				// The oldest live job wants other settings: leave everything for its turn.
				n := copy(b.waiting, b.waiting[i:])
				clear(b.waiting[n:])
				b.waiting = b.waiting[:n]
				return nil, true
			}
			kept = append(kept, j)
		default:
			taken = append(taken, j)
		}
	}
	clear(b.waiting[len(kept):])
	b.waiting = kept
	return taken, false
}

// batchable reports whether a job of options o can be decoded with jobs of options opts: in a running batch
// when they have the same app.StreamShape, each with its own search settings; gathered for the alignment
// attention (opts.Alignment), which app.TranslateTokens decodes with one setting, when they are equal.
func batchable(o, opts app.DecodeOptions) bool {
	if opts.Alignment || o.Alignment {
		return o == opts
	}
	return app.StreamShape(o) == app.StreamShape(opts)
}

// tokens are the job's tokens for model m: those it was checked with, unless the model was reloaded since.
func (j *job) tokensFor(m *loaded) []string {
	if j.model == m {
		return j.tokens
	}
	return m.tokenizer.Tokenize(j.text)
}

// stream decodes jobs of options opts with model m as they arrive, in a running batch on the worker's core,
// until none is left or the model changes, the batcher closes, or other settings wait.
func (b *batcher) stream(m *loaded, opts app.DecodeOptions) {
	inBatch := map[*job]bool{}
	defer b.recoverJobs(inBatch)
	// The sentences this stream took and answered, whose difference is its share of b.decoding.
	taken, answered := 0, 0
	defer func() { b.decoding.Add(int64(answered - taken)) }()
	took := false
	err := app.TranslateStream(m.ck.Model, opts, 1, func(room int) []app.StreamSentence {
		// Between two steps the worker lets the goroutines waiting for a core run: the requests whose answers its
		// last step gave, those that arrived. A worker never waits while it has sentences, so without this they
		// waited for the Go scheduler to preempt it, every 10 ms: at half load, greedy search's p50 was 18 ms
		// where the server took 8.
		runtime.Gosched()
		if b.closed() || b.model() != m {
			return nil
		}
		if room <= 0 {
			return []app.StreamSentence{} // (none waiting for it)
		}
		// What the batch has room for, one block at most, and no more than an even share among the workers of
		// the sentences being decoded and waiting, so that every core has its part: the rest stay in the queue,
		// for the other workers (or this one's next steps, as its sentences end), and where a request that goes
		// away is dropped from.
		share := (b.queued()+int(b.decoding.Load())+b.workers-1)/b.workers - (taken - answered)
		if share <= 0 {
			return []app.StreamSentence{}
		}
		jobs, yield := b.takeOrYield(opts, min(room, opts.Batch, share))
		if yield {
			return nil // other settings wait: finish this batch
		}
		sents := make([]app.StreamSentence, len(jobs))
		for i, j := range jobs {
			inBatch[j] = true
			sents[i] = app.StreamSentence{Tokens: j.tokensFor(m), Search: &j.opts, Done: func(tr app.Translation) {
				answered++
				b.decoding.Add(-1)
				delete(inBatch, j)
				b.metrics.sentences.Inc()
				j.done(tr, nil)
			}}
		}
		taken += len(jobs)
		b.decoding.Add(int64(len(jobs)))
		if len(jobs) > 0 {
			if b.queued() > 0 {
				// This worker took its share and left the rest: another worker (one wake reached only this one)
				// takes its own, rather than leave its core idle until the next request.
				b.nudge()
			}
			took = true
			b.metrics.batch.Observe(float64(len(jobs)))
		}
		return sents
	})
	if err != nil {
		b.fail(inBatch, err)
	}
	if err != nil && !took {
		// The stream refused these settings before it took a sentence: the sentences waiting for them fail with
		// its error now, rather than wait for their timeout while the run loop asks again and again.
		for _, j := range b.take(opts, math.MaxInt) {
			j.done(app.Translation{}, err)
		}
	}
}

// gather gathers jobs of options opts for up to b.wait, or until a batch per core is full, and decodes them
// together with model m.
func (b *batcher) gather(m *loaded, opts app.DecodeOptions) {
	most := opts.Batch * runtime.GOMAXPROCS(0)
	jobs := b.take(opts, most)
	if len(jobs) < most && b.wait > 0 {
		deadline := time.NewTimer(b.wait)
	gather:
		for len(jobs) < most {
			select {
			case <-deadline.C:
				break gather
			case <-b.wake:
				jobs = append(jobs, b.take(opts, most-len(jobs))...)
			}
		}
		deadline.Stop()
		// The wake this consumed may have been for other settings' jobs: the run loop looks at the queue again.
		jobs = append(jobs, b.take(opts, most-len(jobs))...)
	}
	// A request that went away while the batch gathered is dropped from it.
	live := jobs[:0]
	for _, j := range jobs {
		if j.ctx.Err() != nil {
			b.drop(j)
		} else {
			live = append(live, j)
		}
	}
	jobs = live
	if len(jobs) == 0 {
		return
	}
	inBatch := map[*job]bool{}
	for _, j := range jobs {
		inBatch[j] = true
	}
	defer b.recoverJobs(inBatch)
	b.metrics.batch.Observe(float64(len(jobs)))
	sents := make([][]string, len(jobs))
	for i, j := range jobs {
		sents[i] = j.tokensFor(m)
	}
	trs, err := app.TranslateTokens(context.Background(), m.ck.Model, sents, opts)
	if err != nil {
		b.fail(inBatch, err)
		return
	}
	for i, j := range jobs {
		delete(inBatch, j)
		b.metrics.sentences.Inc()
		j.done(trs[i], nil)
	}
}

// fail answers every job of the batch with err.
func (b *batcher) fail(inBatch map[*job]bool, err error) {
	for j := range inBatch {
		delete(inBatch, j)
		j.done(app.Translation{}, err)
	}
}

// recoverJobs, deferred, turns a panic of the decoder into an error for the jobs of its batch, logged, so that
// one bad batch does not take the server down.
func (b *batcher) recoverJobs(inBatch map[*job]bool) {
	if r := recover(); r != nil {
		b.logger.Printf("decoder failed: %v", r)
		b.fail(inBatch, fmt.Errorf("the decoder failed: %v", r))
	}
}
