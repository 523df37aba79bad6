package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
)

// ErrInterrupted is what an *InterruptedError matches with errors.Is: training stopped because its context was
// cancelled, after saving its exact position.
var ErrInterrupted = errors.New("training interrupted")

// InterruptedError is returned by Train when its context is cancelled. The checkpoint at Path holds the exact
// position (Path is empty when the run stopped before its first step could be saved).
type InterruptedError struct {
	Path        string
	Step, Epoch int // optimizer steps in all, and the epoch in progress (from 1)
}

// Error says where the run stopped and where its progress is.
func (e *InterruptedError) Error() string {
	return fmt.Sprintf("training interrupted at step %d (epoch %d); progress saved in %s", e.Step, e.Epoch, e.Path)
}

// Is makes errors.Is(err, ErrInterrupted) true.
func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }

// Recorder follows a training run as it goes. Train calls it and draws nothing itself: the command decides
// between a progress bar and plain log lines. Every method is called from Train's goroutine.
type Recorder interface {
	// EpochStart is called when an epoch begins (or a resumed run continues one), with where the run stands
	// and where it will end.
	EpochStart(EpochStart)
	// BatchDone is called after each batch.
	BatchDone()
	// Logged is called every train.log_every steps, with what the metrics line holds.
	Logged(StepLog)
	// Validated is called after each validation.
	Validated(ValidLog)
	// EpochEnd is called when the batches of an epoch are done or the run stops within it.
	EpochEnd()
}

// EpochStart is where an epoch begins, for Recorder.EpochStart.
type EpochStart struct {
	Epoch, Epochs int // the epoch (from 1) of train.epochs
	Batches, Done int // the epoch's batches, Done of them already trained on (a resumed run)
	// Step is the optimizer steps taken before the epoch's next batch, in all (resumed runs included), and Steps
	// the step the run will end at: train.max_steps, or the last batch of the last epoch when that comes first
	// (counting each epoch to come as long as this one; with data.batch_tokens the epochs' batch counts can
	// differ a little, and each EpochStart brings the figure up to date). A run that loses its patience
	// (train.patience) ends before it.
	Step, Steps int
}

// StepLog is one logging window of training.
type StepLog struct {
	Step int     // optimizer steps in all
	Loss float64 // token-averaged over the window's good steps (NaN if there were none)
	// Guiding is set when the run trains with guided alignment (train.guided_alignment), and Guided is then
	// its cross-entropy averaged likewise.
	Guiding   bool
	Guided    float64
	TgtTokens int     // target words in the window's good steps
	TokPerS   float64 // target words per second of wall time over the window
	GradNorm  float64 // of the last good step, before clipping
	BadSteps  int     // steps of the window skipped for a non-finite loss or gradient norm
	ElapsedS  float64 // training seconds in all, resumed runs included

	// Epoch is the epoch (from 1) that step Step belongs to, and EpochsDone the number of epochs complete once it
	// was taken: Epoch - 1 within an epoch, Epoch after its last step. ValidLog counts the same way.
	Epoch, EpochsDone int
}

// ValidLog is one validation, of the weights after step Step.
type ValidLog struct {
	Step int
	// Epoch is the epoch (from 1) that step Step belongs to, and EpochsDone the number of epochs complete, as in
	// StepLog: a validation at an epoch's end has EpochsDone = Epoch, one within it EpochsDone = Epoch - 1.
	Epoch, EpochsDone int
	Loss, PPL         float64
	BLEU              float64 // of the first train.valid_bleu pairs, greedy; NaN when not measured
	Best              bool    // the best so far by train.best_metric: the best checkpoint was written
	ElapsedS          float64
	AER               float64 // of the attention against gold links (TrainOptions.Watch); NaN when not measured
}

// TrainOptions is one training run. Corpus and Valid are encoded with the model's vocabularies.
type TrainOptions struct {
	Config Config
	// Corpus is the training corpus: a slice of examples (data.Examples), or a data.Store, which may keep its ids
	// on disk and gives the same batches as the same examples in a slice.
	Corpus data.Source
	Valid  []data.Example
	// BeforeSave, when not nil, is called on the lead process before each checkpoint is written, from Train's
	// goroutine: the moment to change what the model holds beside its weights (attend train adds the lexicon it
	// learns while training runs).
	BeforeSave func()
	// Model is the model to train: a fresh one, or a loaded checkpoint's (then Progress and Adam come with it).
	Model    *Seq2Seq[float32]
	Adam     *Adam[float32] // nil: a fresh optimizer; its learning rate is set to Config.Train.LR
	Progress Progress
	Out      string    // checkpoint path of the last state; the best goes to BestPath(Out)
	Metrics  io.Writer // JSON lines, one per logged step and per validation (nil: none); a write error stops training
	Recorder Recorder  // nil: none
	// Guide gives the alignment links of example i of Corpus for guided alignment
	// (train.guided_alignment), nil without. With Group, every process guides the rows of its own shard.
	Guide func(i int) []align.Link
	// Group is the set of processes training together (nil: this one alone). Every process runs Train with the
	// same options on the same data and takes its share of every batch; only rank 0 validates, writes
	// checkpoints and metrics, and reports to the Recorder.
	Group dist.Group
	// Workers step each batch together in this process (Trainer.SetWorkers; 0 or 1: one), each a share of this
	// process's rows; the app sets it from train.workers (TrainConfig.WorkerCount).
	Workers int
	// Products are the products the run multiplies in, chosen once from Config.Train.Precision
	// (TrainConfig.Products) by the caller that also describes them; nil: Train chooses them.
	Products *kernels.Products
	// Watch, when not nil, is called on the lead process after each validation, before it is reported, while
	// the model holds the weights validated (attend train writes the watched sentences' attention then,
	// train.watch_sentences). It returns the alignment error rate of the attention against gold links, NaN
	// when not measured, which ValidLog.AER and the metrics file's "valid_aer" carry. An error stops training.
	Watch func(ValidLog) (aer float64, err error)
}

// Summary is the outcome of a training run.
type Summary struct {
	Steps, Epochs       int // in all, a resumed run's earlier ones included
	BadSteps            int // steps skipped in this run for a non-finite loss or gradient norm
	TokensPerSecond     float64
	TrainLoss           float64 // token-averaged over the last logging window
	ValidLoss, ValidPPL float64 // NaN without validation data
	ValidBLEU           float64 // NaN without train.valid_bleu
	// StoppedEarly is set when train.patience validations in a row did not improve (BadValidations of them).
	StoppedEarly   bool
	BadValidations int
}

// String is the last line a training run prints.
func (s Summary) String() string {
	epochs := ", " + plural.Count(s.Epochs, "epoch")
	if s.Epochs == 0 {
		epochs = " (within epoch 1)"
	}
	line := fmt.Sprintf("done: %s%s, %.0f tgt tok/s, train loss %.4f", plural.Count(s.Steps, "step"), epochs, s.TokensPerSecond, s.TrainLoss)
	if math.IsNaN(s.ValidLoss) {
		line += ", no validation"
	} else {
		line += fmt.Sprintf(", valid loss %.4f, valid ppl %.3f", s.ValidLoss, s.ValidPPL)
	}
	if !math.IsNaN(s.ValidBLEU) {
		line += fmt.Sprintf(", valid BLEU %.2f", s.ValidBLEU)
	}
	if s.BadSteps > 0 {
		line += fmt.Sprintf(", %s skipped (non-finite)", plural.Count(s.BadSteps, "step"))
	}
	if s.StoppedEarly {
		line += fmt.Sprintf("; stopped early: %s in a row without improvement (train.patience)", plural.Count(s.BadValidations, "validation"))
	}
	return line
}

// dropoutStream is the PCG stream of the dropout masks; the epoch shuffles use stream epoch+1, init stream 0.
const dropoutStream = 1 << 40

// Products returns the products train.precision chooses on this CPU (kernels.Choose), or an error naming the key
// where the CPU cannot run them.
func (t TrainConfig) Products() (kernels.Products, error) {
	p, err := kernels.Choose(t.Precision)
	if err != nil {
		return p, fmt.Errorf("config: train.precision: %w", err)
	}
	return p, nil
}

// Train runs the training loop: epochs of shuffled, bucketed batches; a checkpoint every SaveEvery steps, at each
// epoch end and on interruption; validation after each epoch, keeping the best checkpoint. Batches depend only
// on (seed, epoch) and dropout masks on (seed, step), so a resumed run reproduces an uninterrupted one.
//
// A step whose loss or gradient norm is not finite is skipped (no update) and counted; MaxBadSteps of them in a
// row stop the run with an error. A cancelled ctx saves the position and returns an *InterruptedError.
func Train(ctx context.Context, o TrainOptions) (Summary, error) {
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	products := o.Products
	if products == nil {
		p, err := cfg.Train.Products()
		if err != nil {
			return Summary{}, err
		}
		products = &p
	}
	r := newRun(ctx, o)
	if err := r.tr.SetProducts(*products); err != nil {
		return Summary{}, fmt.Errorf("config: train.precision: %w", err)
	}
	if r.prog.ValidPending {
		if err := r.validate(); err != nil {
			return r.sum, err
		}
	}
	opts := data.BatchOptions{BatchSize: cfg.Data.Batch, BatchTokens: cfg.Data.BatchTokens, ChunkBatches: cfg.Data.BucketChunk,
		RoundLen: cfg.Data.RoundLen, Shuffle: true}
	corpus := o.Corpus
	reserved := false
	for r.prog.Epoch < cfg.Train.Epochs && !r.done() {
		// The epoch's batches are planned at once and padded one at a time, as they are trained on.
		batches := data.PlanBatches(corpus, opts, rand.New(rand.NewPCG(cfg.Train.Seed, uint64(r.prog.Epoch)+1)))
		if !reserved { // every epoch has the same sentences, so the first one's largest batch is the run's
			if err := reserveScratch(r.tr, batches, r.group); err != nil {
				return r.sum, err
			}
			reserved = true
		}
		if err := r.trainEpoch(batches, corpus); err != nil {
			return r.sum, err
		}
		if r.prog.Batch >= batches.Len() {
			r.prog.Epoch++
			r.prog.Batch = 0
		}
		// The epoch's (or the step limit's) validation, then its checkpoint: see trainEpoch.
		if err := r.validate(); err != nil {
			return r.sum, err
		}
		if err := r.checkpoint(); err != nil {
			return r.sum, err
		}
	}
	r.sum.Steps, r.sum.Epochs = r.prog.Step, r.prog.Epoch
	r.sum.StoppedEarly, r.sum.BadValidations = r.prog.patienceLost(cfg.Train), r.prog.BadValidations
	if r.runSeconds > 0 {
		r.sum.TokensPerSecond = float64(r.runTokens) / r.runSeconds
	}
	return r.sum, nil
}

// run is one call of Train: its options, its trainer, and what changes as it goes.
type run struct {
	ctx     context.Context
	o       TrainOptions
	cfg     Config
	tr      *Trainer[float32]
	group   dist.Group
	lead    bool     // rank 0: the process that validates, saves, logs and reports
	rec     Recorder // the options' Recorder on the lead process, else one that does nothing
	metrics metricsLog
	prog    Progress // the options' Progress, advanced step by step
	sum     Summary

	stopFlag    []float64 // stopRequested's one-value buffer, summed over the group
	validatedAt int       // the step of this run's last validation: a step is validated once
	badInRow    int       // steps skipped in a row for a non-finite loss or gradient
	runTokens   int       // target tokens of this run's good steps, and their seconds
	runSeconds  float64
}

// newRun sets up a run of o: its trainer and optimizer, and what only the lead process reports or writes.
func newRun(ctx context.Context, o TrainOptions) *run {
	cfg := o.Config
	r := &run{ctx: ctx, o: o, cfg: cfg, group: o.Group, rec: o.Recorder, prog: o.Progress,
		sum: Summary{ValidLoss: math.NaN(), ValidPPL: math.NaN(), ValidBLEU: math.NaN()}, stopFlag: make([]float64, 1), validatedAt: -1}
	r.tr = NewTrainer(o.Model, cfg.Train.LR, cfg.Train.Clip, cfg.Train.GraphCache)
	r.tr.Unfused = cfg.Train.Unfused
	r.tr.SetWorkers(o.Workers)
	r.tr.LabelSmoothing = cfg.Train.LabelSmoothing
	r.tr.Guide, r.tr.GuideWeight = o.Guide, cfg.Train.GuidedAlignmentWeight
	r.tr.SplitVocabulary = cfg.Train.SplitVocabulary
	if o.Adam != nil {
		r.tr.Optimizer = o.Adam
		r.tr.Optimizer.LR = cfg.Train.LR
	}
	if r.group == nil {
		r.group = dist.Single{}
	}
	r.lead = r.group.Rank() == 0
	if r.rec == nil || !r.lead {
		r.rec = nopRecorder{}
	}
	if r.lead {
		r.metrics.w = o.Metrics
	}
	return r
}

// done tells whether the run has reached train.max_steps or lost its patience.
func (r *run) done() bool {
	return r.cfg.Train.MaxSteps > 0 && r.prog.Step >= r.cfg.Train.MaxSteps || r.prog.patienceLost(r.cfg.Train)
}

// save writes the position to path (on the lead process only).
func (r *run) save(path string) error {
	if !r.lead {
		return nil
	}
	if r.o.BeforeSave != nil {
		r.o.BeforeSave()
	}
	return Save(path, r.cfg, r.o.Model, r.tr.Optimizer, r.prog)
}

// checkpoint saves the position to --out and, with train.keep_last, keeps it as the step's checkpoint too.
func (r *run) checkpoint() error {
	if err := r.save(r.o.Out); err != nil || !r.lead || r.cfg.Train.KeepLast == 0 {
		return err
	}
	return keepStep(r.o.Out, r.prog.Step, r.cfg.Train.KeepLast, r.save)
}

// stopRequested tells whether to stop before the next step. Processes of a group agree on it (any one's
// interruption stops all at the same step), since one that stopped alone would leave the others waiting.
func (r *run) stopRequested() (bool, error) {
	r.stopFlag[0] = 0
	if r.ctx.Err() != nil {
		r.stopFlag[0] = 1
	}
	if r.group.Size() > 1 {
		if err := r.group.SumFloat64(r.stopFlag); err != nil {
			return true, err
		}
	}
	return r.stopFlag[0] > 0, nil
}

// interrupted saves the position and returns the *InterruptedError that says where it is.
func (r *run) interrupted() error {
	if err := r.save(r.o.Out); err != nil {
		return fmt.Errorf("interrupted, and the checkpoint could not be saved: %w", err)
	}
	return &InterruptedError{Path: r.o.Out, Step: r.prog.Step, Epoch: r.prog.Epoch + 1}
}

// validate runs after an epoch, every train.valid_every steps and at a step limit; it is marked pending in the
// checkpoint until it is done, so that an interruption during it is made good by the resumed run. Only the lead
// process validates; it then shares the outcome that steers training (the learning-rate decay and the count
// toward train.patience) with the others, which all call validate at the same steps.
func (r *run) validate() error {
	prog, cfg := &r.prog, r.cfg
	if len(r.o.Valid) == 0 || r.validatedAt == prog.Step {
		prog.ValidPending = false
		return nil
	}
	r.validatedAt = prog.Step
	prog.ValidPending = true
	vl, bleu := math.NaN(), math.NaN()
	var stopped error
	if r.lead {
		vl, stopped = ValidLoss(r.ctx, r.o.Model, r.o.Valid, cfg.Data.Batch)
		if stopped == nil && cfg.Train.ValidBLEU > 0 {
			bleu, stopped = ValidBLEU(r.ctx, r.o.Model, r.o.Valid, cfg.Train.ValidBLEU, cfg.Decode.Batch, cfg.Decode.MaxLen)
		}
	}
	best := false
	if stopped == nil && r.lead {
		best = prog.recordValidation(vl, bleu, cfg.Train)
	}
	if r.group.Size() > 1 {
		// [stopped, LRScale, BadValidations] summed over the group, where only the lead is non-zero.
		shared := make([]float64, 3)
		if r.lead {
			shared[1], shared[2] = prog.lrScale(), float64(prog.BadValidations)
			if stopped != nil {
				shared[0] = 1
			}
		}
		if err := r.group.SumFloat64(shared); err != nil {
			return err
		}
		if shared[0] > 0 {
			stopped = context.Canceled
		}
		prog.LRScale, prog.BadValidations = shared[1], int(shared[2])
	}
	if stopped != nil {
		return r.interrupted()
	}
	prog.ValidPending = false
	if !r.lead {
		return nil
	}
	r.sum.ValidLoss, r.sum.ValidPPL, r.sum.ValidBLEU = vl, math.Exp(vl), bleu
	epoch, done := prog.stepEpochs()
	v := ValidLog{Step: prog.Step, Epoch: epoch, EpochsDone: done, Loss: vl, PPL: math.Exp(vl), BLEU: bleu, Best: best, ElapsedS: prog.ElapsedS,
		AER: math.NaN()}
	if r.o.Watch != nil {
		var err error
		if v.AER, err = r.o.Watch(v); err != nil {
			return err
		}
	}
	if best {
		if err := r.save(BestPath(r.o.Out)); err != nil {
			return err
		}
	}
	r.rec.Validated(v)
	entry := map[string]any{"event": "valid", "step": v.Step, "epoch": v.Epoch, "epochs_done": v.EpochsDone, "valid_loss": v.Loss,
		"valid_ppl": v.PPL, "best": best, "bad_validations": prog.BadValidations, "lr": learningRate(cfg.Train, *prog),
		"elapsed_s": v.ElapsedS}
	if cfg.Train.ValidBLEU > 0 {
		entry["valid_bleu"] = v.BLEU
	}
	if !math.IsNaN(v.AER) {
		entry["valid_aer"] = v.AER
	}
	return r.metrics.write(entry)
}

// stepEpochs says where the last step taken (p.Step) stands when the position is between steps, as at a
// validation: epoch is the epoch it belongs to, from 1, and done the epochs complete. At an epoch boundary
// (Batch 0) the step was the last of epoch p.Epoch, which is done.
func (p Progress) stepEpochs() (epoch, done int) {
	if p.Batch == 0 && p.Epoch > 0 {
		return p.Epoch, p.Epoch
	}
	return p.Epoch + 1, p.Epoch
}

// trainEpoch trains on batches from r.prog.Batch on, until the epoch ends, the run is done or a step fails;
// it logs every train.log_every steps, validates every train.valid_every steps and saves every
// train.save_every steps. A step's validation comes before its checkpoint, so that a checkpoint of step S holds
// every validation of S and the metrics records of S are exactly those the checkpoint went through. At an
// epoch's end or the run's, both are left to Train, which validates and then saves.
func (r *run) trainEpoch(plan *data.Plan, corpus data.Source) error {
	prog, cfg := &r.prog, r.cfg
	r.rec.EpochStart(r.epochStart(plan.Len()))
	defer r.rec.EpochEnd()
	win := logWindow{StepLog: StepLog{GradNorm: math.NaN()}, start: time.Now()}
	batches := plan.Read(corpus, prog.Batch)
	defer batches.Close()
	for prog.Batch < plan.Len() && !r.done() {
		if stop, err := r.stopRequested(); stop || err != nil {
			return errors.Join(err, r.interrupted())
		}
		b, err := batches.Next()
		if err != nil {
			return fmt.Errorf("epoch %d batch %d: %w", prog.Epoch+1, prog.Batch, err)
		}
		start := time.Now()
		// Each process draws its own dropout masks; rank 0's are those of a run on one process.
		// The bare PCG, not a rand.Rand over it, so that long masks are drawn on every core (fillDropoutMask).
		dropout := rand.NewPCG(cfg.Train.Seed+dropoutStream, uint64(prog.Step)^uint64(r.group.Rank())<<48)
		r.tr.Optimizer.LR = learningRate(cfg.Train, *prog)
		res, err := r.tr.Step(&b, dropout, r.group)
		if err != nil {
			return fmt.Errorf("epoch %d batch %d: %w", prog.Epoch+1, prog.Batch, err)
		}
		elapsed := time.Since(start).Seconds()
		prog.ElapsedS += elapsed
		prog.Step++
		prog.Batch++
		if res.Skipped {
			win.BadSteps++
			r.sum.BadSteps++
			r.badInRow++
		} else {
			r.badInRow = 0
			r.runSeconds += elapsed
			r.runTokens += res.Tokens
			win.add(res)
		}
		tooManyBad := r.badInRow >= cfg.Train.MaxBadSteps
		if prog.Step%cfg.Train.LogEvery == 0 || prog.Batch == plan.Len() || r.done() || tooManyBad {
			if err := r.log(&win, prog.Batch == plan.Len()); err != nil {
				if serr := r.save(r.o.Out); serr != nil {
					return errors.Join(err, serr)
				}
				return fmt.Errorf("%w (the position is saved in %s)", err, r.o.Out)
			}
		}
		if tooManyBad {
			// The skipped steps changed no weight, so the state is as sound as before them: keep it, then stop.
			// (Save refuses weights that were not finite to begin with.)
			return errors.Join(fmt.Errorf("training stopped at step %d (epoch %d): %s in a row had a non-finite loss or gradient norm (train.max_bad_steps); %s holds the weights before them; lower train.lr or check the data",
				prog.Step, prog.Epoch+1, plural.Count(r.badInRow, "step"), r.o.Out), r.save(r.o.Out))
		}
		r.rec.BatchDone()
		if cfg.Train.ValidEvery > 0 && prog.Step%cfg.Train.ValidEvery == 0 && prog.Batch < plan.Len() {
			if err := r.validate(); err != nil {
				return err
			}
		}
		if cfg.Train.SaveEvery > 0 && prog.Step%cfg.Train.SaveEvery == 0 && prog.Batch < plan.Len() && !r.done() {
			if err := r.checkpoint(); err != nil {
				return err
			}
		}
	}
	return nil
}

// epochStart is where the epoch of batches batches that r.prog is in stands.
func (r *run) epochStart(batches int) EpochStart {
	prog, cfg := r.prog, r.cfg.Train
	steps := prog.Step + batches - prog.Batch + (cfg.Epochs-prog.Epoch-1)*batches
	if cfg.MaxSteps > 0 {
		steps = min(steps, cfg.MaxSteps)
	}
	return EpochStart{Epoch: prog.Epoch + 1, Epochs: cfg.Epochs, Batches: batches, Done: prog.Batch, Step: prog.Step, Steps: steps}
}

// logWindow gathers the steps since the last log line.
type logWindow struct {
	StepLog
	lossSum   float64 // Σ loss·tokens over the good steps
	guidedSum float64 // Σ guided·tokens
	start     time.Time
}

// add counts a good step.
func (w *logWindow) add(res StepResult) {
	w.lossSum += res.Loss * float64(res.Tokens)
	w.guidedSum += res.Guided * float64(res.Tokens)
	w.TgtTokens += res.Tokens
	w.GradNorm = res.GradNorm
}

// log reports the window to the recorder and the metrics file, then starts a new one; epochEnd says the
// window's last step ended its epoch.
func (r *run) log(w *logWindow, epochEnd bool) error {
	w.Step, w.Epoch, w.EpochsDone, w.ElapsedS = r.prog.Step, r.prog.Epoch+1, r.prog.Epoch, r.prog.ElapsedS
	if epochEnd {
		w.EpochsDone++
	}
	w.TokPerS = float64(w.TgtTokens) / time.Since(w.start).Seconds()
	w.Loss = w.lossSum / float64(w.TgtTokens) // NaN when every step of the window was skipped
	if w.Guiding = r.tr.Guide != nil; w.Guiding {
		w.Guided = w.guidedSum / float64(w.TgtTokens)
	}
	if w.TgtTokens > 0 {
		r.sum.TrainLoss = w.Loss
	}
	r.rec.Logged(w.StepLog)
	record := map[string]any{"event": "step", "step": w.Step, "epoch": w.Epoch, "epochs_done": w.EpochsDone, "loss": w.Loss,
		"tgt_tokens": w.TgtTokens, "tok_per_s": w.TokPerS, "grad_norm": w.GradNorm, "bad_steps": w.BadSteps,
		"lr": r.tr.Optimizer.LR, "elapsed_s": w.ElapsedS}
	if r.tr.Guide != nil {
		record["guided_loss"] = w.Guided
	}
	err := r.metrics.write(record)
	*w = logWindow{StepLog: StepLog{GradNorm: math.NaN()}, start: time.Now()}
	return err
}

// ValidLoss is the token-averaged cross-entropy of examples under teacher forcing, without dropout. It stops
// between batches when ctx is cancelled and returns ctx's error.
func ValidLoss(ctx context.Context, m *Seq2Seq[float32], examples []data.Example, batchSize int) (float64, error) {
	var total float64
	var tokens int
	for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: batchSize}, nil) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		s, n := m.Loss(&b)
		total += s
		tokens += n
	}
	return total / float64(max(tokens, 1)), nil
}

// metricsLog writes JSON lines to w (nil: nowhere). Non-finite numbers, which JSON cannot hold, are written as
// null.
type metricsLog struct{ w io.Writer }

func (l metricsLog) write(rec map[string]any) error {
	if l.w == nil {
		return nil
	}
	for k, v := range rec {
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			rec[k] = nil
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if _, err := fmt.Fprintf(l.w, "%s\n", line); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

// nopRecorder is the Recorder of a run nobody watches.
type nopRecorder struct{}

func (nopRecorder) EpochStart(EpochStart) {}
func (nopRecorder) BatchDone()            {}
func (nopRecorder) Logged(StepLog)        {}
func (nopRecorder) Validated(ValidLog)    {}
func (nopRecorder) EpochEnd()             {}

// reserveScratch sizes tr's scratch for the largest rows, source and target lengths among the planned
// batches, as this process of group trains on them (its shard of each batch, data.Batch.Shard).
func reserveScratch(tr *Trainer[float32], plan *data.Plan, group dist.Group) error {
	var rows, srcLen, tgtLen int
	for k := range plan.Len() {
		n, real, s, t := plan.Shape(k)
		if group.Size() > 1 {
			n = data.ShardRows(real, group.Rank(), group.Size())
		}
		rows, srcLen, tgtLen = max(rows, n), max(srcLen, s), max(tgtLen, t)
	}
	if err := tr.Reserve(rows, srcLen, tgtLen); err != nil {
		return fmt.Errorf("sizing the training scratch for batches of %d × %d × %d: %w", rows, srcLen, tgtLen, err)
	}
	return nil
}
