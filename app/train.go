// Package app carries out attend's commands — train, translate, demo — on top of the library packages, so that
// cmd/attend only parses flags and every command can be tested without a command line.
package app

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// Corpus names a parallel corpus: two line-aligned files, or one TSV file.
type Corpus struct {
	Src, Tgt string // line-aligned source and target files
	TSV      string // or: one file, column 1 source, column 2 target
}

// String names the corpus's files, for messages.
func (c Corpus) String() string {
	if c.TSV != "" {
		return c.TSV
	}
	return c.Src + " and " + c.Tgt
}

// Empty reports whether no file is named.
func (c Corpus) Empty() bool { return c.Src == "" && c.Tgt == "" && c.TSV == "" }

// Read reads and tokenizes the corpus.
func (c Corpus) Read(tok data.Tokenizer) ([]data.Pair, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.TSV != "" {
		return data.ReadTSV(c.TSV, tok)
	}
	return data.ReadParallel(c.Src, c.Tgt, tok)
}

// TrainRequest is everything `attend train` needs.
type TrainRequest struct {
	// Config is the configuration the user asked for: a config file or the defaults, with the command line's
	// overrides applied.
	Config model.Config
	// ConfigFile names the file Config was read from ("" for the built-in defaults). On resume, a config file
	// is compared with the checkpoint's as a whole; without one, only Overrides apply on top of the checkpoint's.
	ConfigFile string
	Overrides  func(*model.Config) error // the command line's overrides, applied again on top of a resumed config
	Train      Corpus
	// Valid is the validation corpus (optional). On resume an empty one means the files the checkpoint's run
	// validated on (model.Progress.ValidFiles), unless NoValid is set.
	Valid       Corpus
	NoValid     bool   // no validation, even on resume of a run that validated
	Out         string // checkpoint path
	Resume      string // checkpoint to continue from (see model.CheckResume for what may change)
	MetricsPath string // default: Out with .metrics.jsonl
	// ValidGold is a Pharaoh file of gold links (positions from 0) of the first validation pairs, whose AER the
	// attention is scored against at every validation (watcher.validated); "" for none.
	ValidGold  string
	CPUProfile string // optional: a CPU profile of the run is written there (by the lead process)
	Stdout     io.Writer
	// Recorder is the progress display (nil: none). One that is also a PhaseRecorder shows the phases before
	// the first step too.
	Recorder model.Recorder
	// Group is the set of processes training together (nil: this one). Processes other than rank 0 print
	// nothing and write nothing.
	Group dist.Group
	// ForceMemory trains even when the model's estimated memory (model.TrainingMemory) is more than the machine
	// has (MachineMemory), with a warning instead of the refusal.
	ForceMemory bool
	// Overwrite lets a run replace the checkpoints of another run at Out (Out itself, NAME.best.ckpt and the step
	// checkpoints of train.keep_last): without it a run that does not continue them (Resume is not one of
	// them) is refused before any work, since it would overwrite a trained model. With it, the step
	// checkpoints of the run it replaces are removed once the lock of Out is taken, so that train.keep_last
	// keeps the new run's. Files that are not attend's (NamedPath.Own) are never replaced.
	Overwrite bool

	// lexiconAfterTraining holds the lexicon back until training has ended, for tests of checkpoints written
	// before it is ready.
	lexiconAfterTraining bool
	products             kernels.Products // chosen once by Train from train.precision
}

// Metrics is the metrics log the run writes: MetricsPath, or by default MetricsPath(Out), beside the checkpoint.
func (r TrainRequest) Metrics() string {
	if r.MetricsPath != "" {
		return r.MetricsPath
	}
	return MetricsPath(r.Out)
}

// TrainOptions is everything `attend train` reads from its command line: a TrainRequest whose Config is read
// from ConfigFile (the defaults when "") with Overrides applied, and where a process of several reports its error.
type TrainOptions struct {
	TrainRequest
	Stderr io.Writer
	// Lead, when set, is called by the lead process of the run (the only one, but under mpirun) before it
	// trains, and the function it returns once it has: `attend train --watch` serves the run's page there.
	Lead func() (done func(), err error)
}

// ReportedError is the error of a process of a distributed run that another process (the lead) reports: a
// command exits with its status without printing it.
type ReportedError struct{ Err error }

// Error is the cause's message.
func (e *ReportedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ReportedError) Unwrap() error { return e.Err }

// RunTrain reads the config, opens the group of processes training together (dist.Open) and trains (Train).
// When one process of several fails other than by an interruption, it prints its error to o.Stderr and ends
// them all, since the others would wait for it forever in the next gradient sum. A process other than the lead
// returns a stop as a *ReportedError: every process stopped at the same step, and the lead reports it.
func RunTrain(ctx context.Context, o TrainOptions) error {
	var (
		cfg   model.Config
		notes []string // replaced keys of the config file, read as their replacements
		err   error
	)
	if o.ConfigFile == "" {
		if cfg, err = model.DefaultPresetWith(o.Overrides); err != nil {
			return err
		}
	} else {
		if cfg, notes, err = model.LoadConfig(o.ConfigFile); err != nil {
			return err
		}
		if o.Overrides != nil {
			if err := o.Overrides(&cfg); err != nil {
				return err
			}
		}
	}
	o.Config = cfg
	group, err := dist.Open()
	if err != nil {
		return err
	}
	o.Group = group
	if group.Rank() == 0 && o.Stderr != nil {
		for _, w := range append(notes, cfg.RecipeWarnings()...) {
			fmt.Fprintf(o.Stderr, "warning: %s\n", w)
		}
	}
	if o.Lead != nil && group.Rank() == 0 {
		done, err := o.Lead()
		if err != nil && group.Size() > 1 {
			fmt.Fprintf(o.Stderr, "attend (process 0 of %d): %v\n", group.Size(), err)
			group.Abort(1) // the other processes would wait for the lead forever
		}
		if err != nil {
			return err
		}
		defer done()
	}
	_, err = Train(ctx, o.TrainRequest)
	var stopped *model.InterruptedError
	interrupted := errors.As(err, &stopped) || errors.Is(err, ErrStopped)
	switch {
	case err != nil && group.Size() > 1 && !interrupted:
		fmt.Fprintf(o.Stderr, "attend (process %d of %d): %v\n", group.Rank(), group.Size(), err)
		group.Abort(1)
	case group.Rank() > 0 && err == nil:
		return group.Close()
	case group.Rank() > 0:
		// Every process stopped at the same step (mpirun signals them all, or another process failed and
		// mpirun is ending the job).
		_ = group.Close()
		return &ReportedError{err}
	}
	if cerr := group.Close(); err == nil {
		err = cerr
	}
	return err
}

// UnkWarning is the share of <unk> in a resumed run's new corpus above which Train warns that the stored
// vocabulary does not fit it.
const UnkWarning = 0.10

// Train checks every setting and every file it reads and writes (trainFiles), takes the lock of --out
// (model.LockPath) so that no other run writes the same checkpoints, removes the temporaries that a run killed
// while saving left beside the checkpoints (checkpoint.RemoveStale), reads the corpora, builds or restores the
// model, trains it and prints a summary line. Nothing is written before the checks pass. A resumed run
// validates on the files its checkpoint names unless told otherwise (TrainRequest.Valid). A cancelled ctx
// stops any phase: before the first step with nothing written, afterwards with the position saved (a
// *model.InterruptedError).
func Train(ctx context.Context, req TrainRequest) (model.Summary, error) {
	if req.Group == nil {
		req.Group = dist.Single{}
	}
	lead := req.Group.Rank() == 0
	if !lead {
		req.Stdout, req.Recorder = io.Discard, nil
	}
	cfg, start, err := trainConfig(req)
	if err != nil {
		return model.Summary{}, err
	}
	if req.products, err = cfg.Train.Products(); err != nil { // the run's one choice, which every part of it uses
		return model.Summary{}, err
	}
	if req.Out == "" {
		return model.Summary{}, fmt.Errorf("no output checkpoint path (--out)")
	}
	metricsPath := req.Metrics()
	valid, stored, err := validCorpus(req, start)
	if err != nil {
		return model.Summary{}, err
	}
	if lead {
		unlock, err := prepareOutputs(req, cfg, start, metricsPath, valid, stored)
		if err != nil {
			return model.Summary{}, err
		}
		defer unlock()
		if req.CPUProfile != "" {
			stop, err := startCPUProfile(req.CPUProfile)
			if err != nil {
				return model.Summary{}, err
			}
			defer stop()
		}
	}
	if req.ValidGold != "" && valid.Empty() {
		return model.Summary{}, fmt.Errorf("--valid-gold scores the attention on the validation corpus; give one (--valid-src and --valid-tgt, or --valid-data)")
	}
	if stored {
		fmt.Fprintf(req.Stdout, "validating on %s from the checkpoint\n", valid)
	}
	threads := useThreads(req.Stdout, &cfg.Train)

	gold, err := readGuideLinks(ctx, req, cfg, start, threads)
	if err != nil {
		return model.Summary{}, err
	}
	corpus, subwords, guide, err := readTrainingCorpus(ctx, req, cfg, start, threads, gold)
	if err != nil {
		return model.Summary{}, err
	}
	if gold != nil {
		gold.lines = nil // guide has the links of the pairs kept: those of the others can go
	}
	defer corpus.Close()
	opts := model.TrainOptions{Config: cfg, Out: req.Out, Recorder: req.Recorder, Group: req.Group, Workers: trainWorkers(cfg.Train),
		Products: &req.products}
	if start != nil {
		opts.Model, opts.Adam, opts.Progress = start.Model, start.Adam, start.Progress
		fmt.Fprintf(req.Stdout, "resuming %s at epoch %d, step %d\n", req.Resume, start.Progress.Epoch+1, start.Progress.Step)
		if err := fitsInMemory(req, cfg, start.Model.SrcVocab, start.Model.TgtVocab, true); err != nil {
			return model.Summary{}, err
		}
	} else if opts.Model, err = newModel(ctx, req, cfg, corpus, subwords); err != nil {
		return model.Summary{}, err
	}
	if opts.Progress.ValidFiles, err = corpusFiles(valid); err != nil {
		return model.Summary{}, err
	}
	m := opts.Model
	fmt.Fprintf(req.Stdout, "model: %s\n", m.Describe())
	fmt.Fprintf(req.Stdout, "BLAS: %s\n", backend.Active())
	if opts.Workers > 1 {
		fmt.Fprintf(req.Stdout, "workers: %d step each batch together, each with single-threaded products (train.workers)\n", opts.Workers)
	}
	if line := trainProducts(req.products); line != "" {
		fmt.Fprintln(req.Stdout, line)
	}
	if m.PacksDecoderGates(opts.Workers, req.products) {
		fmt.Fprintln(req.Stdout, "decoder: its gates' products on float32 weights packed once a step (AVX-512)")
	}
	if sharesVocabulary(cfg.Train, opts.Workers, req.products) {
		fmt.Fprintln(req.Stdout, "output layer: each worker takes every worker's rows through its share of the vocabulary (train.split_vocabulary)")
	}
	arithmetic := trainArithmetic(m, cfg, opts.Workers, req.products)
	if was := opts.Progress.Arithmetic; start != nil && was != "" && was != arithmetic {
		fmt.Fprintf(req.Stdout, "note: the checkpoint's steps were computed with %s, this run's with %s: it goes on from where the "+
			"checkpoint stopped, but rounds otherwise, so it will not repeat an uninterrupted run bit for bit\n", was, arithmetic)
	}
	opts.Progress.Arithmetic = arithmetic
	unknown := corpus.Encode(m.SrcVocab, m.TgtVocab)
	opts.Corpus = corpus.Pairs
	opts.Progress.GuideFile, opts.Progress.GuideSHA256 = "", ""
	if opts.Guide = guide; guide != nil {
		fmt.Fprintf(req.Stdout, "guided alignment: links from %s, weight %g\n", gold.file, cfg.Train.GuidedAlignmentWeight)
		if gold.auto {
			if opts.Progress.GuideFile, err = filepath.Abs(gold.file); err != nil {
				return model.Summary{}, fmt.Errorf("train.guided_alignment auto: %w", err)
			}
			opts.Progress.GuideSHA256 = gold.sum
		}
	}
	if start != nil {
		warnUnknown(req.Stdout, req.Train, unknown)
	}
	var lex *backgroundLexicon
	if m.Lexicon == nil && lead { // a new model, or one trained before lexicons existed; only checkpoints need it
		lex = newLexicon(ctx, m, corpus.Pairs, threads)
		defer lex.stop() // before the corpus it reads is closed
		opts.BeforeSave = func() { lex.install(req.Stdout) }
		if !req.lexiconAfterTraining {
			opts.Recorder = lexiconStarter{Recorder: cmp.Or[model.Recorder](req.Recorder, nopRecorder{}), lex: lex}
		}
	}
	if !valid.Empty() {
		var pairs []data.Pair
		if opts.Valid, pairs, err = readValidation(ctx, valid, cfg.Data.Tokenizer(), m); err != nil {
			return model.Summary{}, err
		}
		if lead {
			if opts.Watch, err = watch(req, cfg, m, valid, pairs); err != nil {
				return model.Summary{}, err
			}
		}
	}
	if !lead {
		Started(ctx) // model.Train saves the position when ctx is cancelled
		return model.Train(ctx, opts)
	}
	if n := req.Group.Size(); n > 1 {
		fmt.Fprintf(req.Stdout, "training on %d processes: each takes %d of every %d sentences\n", n, cfg.Data.Batch/n, cfg.Data.Batch)
	}
	sum, err := trainWithMetrics(ctx, opts, metricsPath, start)
	if err != nil {
		return sum, err
	}
	if lex != nil {
		paths := []string{req.Out}
		if len(opts.Valid) > 0 {
			paths = append(paths, model.BestPath(req.Out))
		}
		if err := lex.finish(ctx, req.Stdout, paths...); err != nil {
			return sum, err
		}
	}
	if len(opts.Valid) > 0 {
		by := "validation loss"
		if cfg.Train.BestByBLEU() {
			by = "validation BLEU"
		}
		fmt.Fprintf(req.Stdout, "checkpoints: %s (last), %s (best %s); metrics: %s\n", req.Out, model.BestPath(req.Out), by, metricsPath)
	} else {
		fmt.Fprintf(req.Stdout, "checkpoint: %s (no validation set, so no best checkpoint); metrics: %s\n", req.Out, metricsPath)
	}
	fmt.Fprintln(req.Stdout, sum)
	return sum, nil
}

// prepareOutputs checks every file the run reads and writes (trainFiles), takes the lock of --out, and removes
// the temporary files that a run killed while saving (kill -9, a power cut) left beside the checkpoints (as large
// as the model), the metrics log and NAME.align. Only the lead process writes checkpoints, so only it locks them
// and judges their temporaries. It returns the function that releases the lock.
func prepareOutputs(req TrainRequest, cfg model.Config, start *model.Checkpoint, metricsPath string, valid Corpus, stored bool) (func(), error) {
	outputs, inputs := trainFiles(req, cfg, start, metricsPath, valid, stored)
	if err := CheckOutputs(outputs, inputs); err != nil {
		return nil, err
	}
	lock, err := checkpoint.TryLock(model.LockPath(req.Out))
	var locked *checkpoint.LockedError
	switch {
	case errors.As(err, &locked) && locked.PID > 0:
		return nil, fmt.Errorf("--out %s is being written by another attend run (process %d, which holds %s); wait for it to end, or give another --out",
			req.Out, locked.PID, locked.Path)
	case errors.As(err, &locked):
		return nil, fmt.Errorf("--out %s is being written by another attend run (it holds %s); wait for it to end, or give another --out", req.Out, locked.Path)
	case err != nil:
		return nil, err
	}
	unlock := func() { lock.Unlock() }
	// Every file written through a temporary: the checkpoints, the metrics log (rewritten on resume) and the
	// links of train.guided_alignment auto.
	for _, written := range []string{req.Out, model.BestPath(req.Out), metricsPath, GuidePath(req.Out)} {
		removed, err := checkpoint.RemoveStale(written)
		for _, name := range removed {
			fmt.Fprintf(req.Stdout, "removed %s, left by a run that stopped while saving\n", name)
		}
		if err != nil {
			unlock()
			return nil, err
		}
	}
	if req.Overwrite && !continuesRun(req) {
		err = errors.Join(removeStepCheckpoints(req.Stdout, req.Out), removeWatched(req.Stdout, req.Out, -1))
	} else if start != nil && continuesRun(req) {
		err = removeWatched(req.Stdout, req.Out, start.Progress.Step)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// continuesRun reports whether req resumes from one of the checkpoints of the run at req.Out (--out itself, its
// best checkpoint or one of its step checkpoints): the files beside --out are then that run's, to go on with.
func continuesRun(req TrainRequest) bool {
	if req.Resume == "" {
		return false
	}
	dir, name := filepath.Split(req.Out)
	steps := NamedPath{Path: GlobOf(dir+strings.TrimSuffix(name, ".ckpt")+".step-", ".ckpt"), Pattern: true}
	return samePath(req.Resume, req.Out) || samePath(req.Resume, model.BestPath(req.Out)) || covers(steps, req.Resume)
}

// removeStepCheckpoints removes the step checkpoints of train.keep_last at out (model.StepCheckpoints) of the run
// that --overwrite replaces: left, they would outnumber the new run's, which keep_last would remove instead.
func removeStepCheckpoints(w io.Writer, out string) error {
	steps, err := model.StepCheckpoints(out)
	if err != nil {
		return err
	}
	for _, s := range steps {
		path := model.StepPath(out, s)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--overwrite: %w", err)
		}
		fmt.Fprintf(w, "removed %s, a step checkpoint of the run --overwrite replaces\n", path)
	}
	return nil
}

// trainFiles lists every file a training run writes — the checkpoint, the best one, the step checkpoints of
// train.keep_last, the temporaries of all three, the metrics log and its temporary, the lock file, the CPU
// profile, the links of train.guided_alignment auto (GuidePath) and their temporary — and every file it reads —
// the corpora, the config file, the checkpoint it resumes from (start), the links of train.guided_alignment
// (with auto, the resumed run's) — for CheckOutputs. stored says that valid comes from the resumed checkpoint.
// Each file the run names itself may replace only a file of attend's of its kind (NamedPath.Own), and the
// checkpoints of another run only with req.Overwrite (NamedPath.Keep).
func trainFiles(req TrainRequest, cfg model.Config, start *model.Checkpoint, metricsPath string, valid Corpus, stored bool) (outputs, inputs []NamedPath) {
	dir, name := filepath.Split(req.Out)
	stem := strings.TrimSuffix(name, ".ckpt")
	out, best := CheckpointOutputs("--out", req.Out), CheckpointOutputs("the best checkpoint", model.BestPath(req.Out))
	steps := NamedPath{Role: "the step checkpoints (train.keep_last)", Path: GlobOf(dir+stem+".step-", ".ckpt"), Pattern: true, Replaceable: true, Own: OwnCheckpoint}
	if !req.Overwrite && !continuesRun(req) {
		other := "holds a trained model of another run, which this one would replace; `--resume` it to continue that run, `--overwrite` to replace it (or give another --out)"
		out[0].Keep, best[0].Keep, steps.Keep = other, other, other
		if req.Resume == "" {
			out[0].Keep = fmt.Sprintf("holds a trained model; `--resume %s` continues it, `--overwrite` replaces it (or give another --out)", req.Out)
		}
		if valid.Empty() {
			best[0].Keep = "" // not written by this run
		}
	}
	outputs = append(append(out, best...), watchOutputs(req.Out, steps.Keep != "")...)
	if cfg.Train.KeepLast > 0 {
		outputs = append(outputs, steps,
			NamedPath{Role: "the temporary files of the step checkpoints", Path: GlobOf(dir+"."+stem+".step-", ""), Pattern: true})
	}
	metricsRole := "--metrics"
	if req.MetricsPath == "" {
		metricsRole = "the metrics file"
	}
	outputs = append(outputs, NamedPath{Role: metricsRole, Path: metricsPath, Example: "metrics.jsonl", Own: OwnMetrics},
		TemporariesOf(metricsRole, metricsPath),
		NamedPath{Role: "the lock file of --out", Path: model.LockPath(req.Out), Own: OwnLock},
		NamedPath{Role: "--cpuprofile", Path: req.CPUProfile, Example: "cpu.prof"})

	validRoles := [3]string{"--valid-src", "--valid-tgt", "--valid-data"}
	if stored {
		validRoles = [3]string{"the checkpoint's validation source", "the checkpoint's validation target", "the checkpoint's validation file"}
	}
	inputs = []NamedPath{{Role: "--src", Path: req.Train.Src}, {Role: "--tgt", Path: req.Train.Tgt}, {Role: "--data", Path: req.Train.TSV},
		{Role: validRoles[0], Path: valid.Src}, {Role: validRoles[1], Path: valid.Tgt}, {Role: validRoles[2], Path: valid.TSV},
		{Role: "--config", Path: req.ConfigFile}, {Role: "--resume", Path: req.Resume, Replaceable: true}, {Role: "--valid-gold", Path: req.ValidGold}}
	if cfg.Train.GuidedAlignment != model.GuideAuto {
		inputs = append(inputs, NamedPath{Role: "train.guided_alignment", Path: cfg.Train.GuidedAlignment})
		return outputs, inputs
	}
	// The links are written whole and renamed into place, and a resumed run reads its own before writing any.
	guide := GuidePath(req.Out)
	const guideRole = "the links of train.guided_alignment auto"
	outputs = append(outputs, NamedPath{Role: guideRole, Path: guide, Replaceable: true, Own: guideOwner(req.Out, start)}, TemporariesOf(guideRole, guide))
	guideFile := ""
	if start != nil {
		guideFile = start.Progress.GuideFile
	}
	inputs = append(inputs, NamedPath{Role: "the links of train.guided_alignment auto of the resumed run", Path: guideFile, Replaceable: true})
	return outputs, inputs
}

// validCorpus returns the corpus the run validates on: req.Valid; on resume without one, the files the
// checkpoint's run validated on (stored is then true), each of which must still exist; none with NoValid.
func validCorpus(req TrainRequest, start *model.Checkpoint) (valid Corpus, stored bool, err error) {
	switch {
	case req.NoValid && !req.Valid.Empty():
		return Corpus{}, false, errors.New("--no-valid and a validation corpus (--valid-src, --valid-tgt, --valid-data): give one or the other")
	case req.NoValid:
		return Corpus{}, false, nil
	case !req.Valid.Empty() || start == nil || start.Progress.ValidFiles.Empty():
		return req.Valid, false, nil
	}
	v := start.Progress.ValidFiles
	valid = Corpus{Src: v.Src, Tgt: v.Tgt, TSV: v.TSV}
	for _, path := range []string{v.Src, v.Tgt, v.TSV} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			what := "cannot be read: " + err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				what = "no longer exists"
			}
			return Corpus{}, false, fmt.Errorf("resume %s: the run validated on %s, and %s %s; give --valid-src and --valid-tgt (or --valid-data) to validate on other files, or --no-valid",
				req.Resume, valid, path, what)
		}
	}
	return valid, true, nil
}

// corpusFiles is c with absolute paths, as a checkpoint keeps it.
func corpusFiles(c Corpus) (model.CorpusFiles, error) {
	var files model.CorpusFiles
	for _, f := range []struct{ from, to *string }{{&c.Src, &files.Src}, {&c.Tgt, &files.Tgt}, {&c.TSV, &files.TSV}} {
		if *f.from == "" {
			continue
		}
		abs, err := filepath.Abs(*f.from)
		if err != nil {
			return files, fmt.Errorf("validation file %s: %w", *f.from, err)
		}
		*f.to = abs
	}
	return files, nil
}

// startCPUProfile starts writing a CPU profile to path and returns the function that stops it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// UseThreads holds Go's scheduler and OpenBLAS's products to n threads — 0 means every CPU, and more than the
// CPUs there are is cut to them with a note on w naming setting (the flag or key n came from) — and returns the
// number of threads in use. A process calls it once, before its work: it changes process-wide settings.
func UseThreads(w io.Writer, n int, setting string) int {
	cpus := runtime.NumCPU()
	if n > cpus {
		fmt.Fprintf(w, "note: %s %d is more than the %s here; using %d\n", setting, n, plural.Count(cpus, "CPU"), cpus)
		n = cpus
	}
	if n <= 0 {
		n = cpus
	}
	runtime.GOMAXPROCS(n)
	// OpenBLAS sizes its pool to every CPU of the machine unless told: hold its products to the same threads.
	backend.SetBLASThreads(n)
	return n
}

// useThreads holds Go, OpenBLAS and the GC to train.threads (see UseThreads) and returns that number of threads.
func useThreads(stdout io.Writer, train *model.TrainConfig) int {
	n := UseThreads(stdout, train.Threads, "train.threads")
	if train.Threads > n {
		train.Threads = n
	}
	if os.Getenv("GOGC") == "" {
		// A training step allocates little (graphs and scratch are reused), so a tight GC target costs no
		// measurable time and keeps the resident set near the live heap: 0.85 GB instead of 1.2 GB on Multi30k.
		debug.SetGCPercent(25)
	}
	return n
}

// trainWorkers is the number of workers of train.workers (model.TrainConfig.WorkerCount) for this process,
// whose threads useThreads has set.
func trainWorkers(train model.TrainConfig) int { return train.WorkerCount(runtime.GOMAXPROCS(0)) }

// trainProducts is the line of the training header that says which products a run multiplies in (empty for
// float32 products, which need no line).
func trainProducts(products kernels.Products) string {
	switch products.Format() {
	case kernels.BF16:
		return "output layer: " + products.String() + ", float32 weights and sums (train.precision)"
	case kernels.BF16x3:
		return "output layer, decoder and recurrent weight gradients: " + products.String() + ", float32 weights and sums (train.precision)"
	}
	return ""
}

// trainArithmetic describes how a run of model m with cfg, workers and products computes its sums, for
// Progress.Arithmetic: the BLAS, the elementwise kernels, the products and the workers, each of which changes how
// sums round.
func trainArithmetic(m *model.Seq2Seq[float32], cfg model.Config, workers int, products kernels.Products) string {
	name := products.String()
	if m.PacksDecoderGates(workers, products) {
		name += ", decoder gates packed"
	}
	a := fmt.Sprintf("BLAS %s, elementwise kernels %s, %s, %s", backend.Active(), kernels.Vector(), name, plural.Count(workers, "worker"))
	if sharesVocabulary(cfg.Train, workers, products) {
		a += " sharing out the vocabulary"
	}
	return a
}

// sharesVocabulary reports whether a run with train, workers and products shares the output layer's vocabulary
// out between its workers (train.split_vocabulary): with several workers whose output layers multiply in
// bfloat16.
func sharesVocabulary(train model.TrainConfig, workers int, products kernels.Products) bool {
	return train.SplitVocabulary && workers > 1 && !products.Float32()
}

// newModel builds the vocabularies of the corpus and a model over them, initialised from train.seed.
// Vocabularies that leave too much of the corpus <unk> (checkVocabularies) and a model that does not fit in
// memory (fitsInMemory) are refused before the model is allocated.
func newModel(ctx context.Context, req TrainRequest, cfg model.Config, corpus *data.Corpus, subwords *data.BPE) (*model.Seq2Seq[float32], error) {
	var m *model.Seq2Seq[float32]
	err := interruptible(ctx, "building the vocabularies", func() error {
		src, tgt := corpus.Vocabs(cfg.Data.MinFreq, cfg.Data.MaxVocab)
		if err := checkVocabularies(req.Stdout, cfg.Data, src, tgt, corpusSide(corpus, false), corpusSide(corpus, true)); err != nil {
			return err
		}
		if err := fitsInMemory(req, cfg, src, tgt, false); err != nil {
			return err
		}
		var err error
		if m, err = model.New[float32](cfg.Model, src, tgt); err != nil {
			return err
		}
		m.Subwords = subwords
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.Init(rand.New(rand.NewPCG(cfg.Train.Seed, 0)))
	return m, nil
}

// fitsInMemory checks the estimated memory of training cfg's model over src and tgt (model.TrainingMemory)
// against the machine's (MachineMemory); resumed says the weights and moments are loaded already.
func fitsInMemory(req TrainRequest, cfg model.Config, src, tgt *data.Vocab, resumed bool) error {
	est, err := model.TrainingMemory(cfg, src, tgt, trainWorkers(cfg.Train), req.products)
	if err != nil {
		return err
	}
	avail, source, known := MachineMemory()
	return checkMemory(req.Stdout, est, avail, source, known, resumed, req.ForceMemory)
}

// readValidation reads the validation corpus as the model reads text: tokenized, in its subwords, encoded
// with its vocabularies; pairs with an empty side are dropped, long ones kept. It also returns the pairs as
// read, one a line, in words.
func readValidation(ctx context.Context, valid Corpus, tok data.Tokenizer, m *model.Seq2Seq[float32]) ([]data.Example, []data.Pair, error) {
	var read []data.Pair
	if err := interruptible(ctx, "reading the validation corpus", func() (err error) {
		read, err = valid.Read(tok)
		return err
	}); err != nil {
		return nil, nil, err
	}
	vp := read
	if m.Subwords != nil {
		vp = SplitPairs(m.Subwords, vp)
	}
	vp, _ = data.Filter(vp, 0)
	return data.EncodeExamples(vp, m.SrcVocab, m.TgtVocab), read, nil
}

// watch returns the model.TrainOptions.Watch of a run on the validation pairs of valid, as read: nil when it
// watches no sentence (train.watch_sentences) and scores no gold links (--valid-gold).
func watch(req TrainRequest, cfg model.Config, m *model.Seq2Seq[float32], valid Corpus, pairs []data.Pair) (func(model.ValidLog) (float64, error), error) {
	w, err := newWatcher(cfg, m, req.Out, valid, pairs, req.ValidGold)
	if err != nil || w == nil {
		return nil, err
	}
	if len(w.watched) > 0 {
		lines := make([]string, len(w.watched))
		for i, p := range w.watched {
			lines[i] = strconv.Itoa(p.Line)
		}
		fmt.Fprintf(req.Stdout, "watching validation lines %s: %s\n", strings.Join(lines, ", "), w.dir)
	}
	return w.validated, nil
}

// trainWithMetrics runs model.Train on the lead process with its metrics file open: new, or for a resumed run
// (start) appended to after the records of steps past the checkpoint are dropped, since those steps are about
// to be trained again.
func trainWithMetrics(ctx context.Context, opts model.TrainOptions, metricsPath string, start *model.Checkpoint) (model.Summary, error) {
	mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if start != nil {
		mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if err := trimMetrics(metricsPath, start.Progress.Step); err != nil {
			return model.Summary{}, err
		}
	}
	mf, err := os.OpenFile(metricsPath, mode, 0o644)
	if err != nil {
		return model.Summary{}, fmt.Errorf("metrics: %w", err)
	}
	opts.Metrics = mf
	Started(ctx) // model.Train saves the position when ctx is cancelled
	sum, err := model.Train(ctx, opts)
	if cerr := mf.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("metrics: %w", cerr)
	}
	return sum, err
}

// trainConfig returns the configuration to train with and, on resume, the loaded checkpoint. A resumed run
// starts from the checkpoint's configuration (or the config file, when one is given), with the command line's
// overrides on top; model.CheckResume decides what may change, and the changes are reported once.
func trainConfig(req TrainRequest) (model.Config, *model.Checkpoint, error) {
	cfg := req.Config
	if req.Resume == "" {
		return cfg, nil, cfg.Validate()
	}
	ck, err := model.Load(req.Resume)
	if err != nil {
		return cfg, nil, err
	}
	if req.ConfigFile == "" {
		cfg = ck.Config
		if req.Overrides != nil {
			if err := req.Overrides(&cfg); err != nil {
				return cfg, nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	for _, note := range ck.Notes {
		fmt.Fprintf(req.Stdout, "resume: %s: %s\n", req.Resume, note)
	}
	changes, err := model.CheckResume(ck.Config, cfg, ck.Progress)
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", req.Resume, err)
	}
	for _, c := range changes {
		fmt.Fprintf(req.Stdout, "resume: %s (takes effect now)\n", c)
	}
	return cfg, ck, nil
}

// warnUnknown warns when a resumed run's corpus is poorly covered by the checkpoint's vocabularies: a sign that
// it is another corpus (or another language pair) than the one the model was built on.
func warnUnknown(w io.Writer, c Corpus, u data.Unknown) {
	for _, side := range []struct {
		name       string
		unk, total int64
	}{{c.Src + c.TSV, u.SrcUnk, u.Src}, {c.Tgt + c.TSV, u.TgtUnk, u.Tgt}} {
		if share := float64(side.unk) / float64(max(side.total, 1)); share > UnkWarning {
			fmt.Fprintf(w, "warning: %.1f%% of the words of %s are unknown to the checkpoint's vocabulary (more than %.0f%%): is it the corpus the model was built on?\n",
				100*share, side.name, 100*UnkWarning)
		}
	}
}

// SplitPairs returns pairs with both sides split into subwords by b.
func SplitPairs(b *data.BPE, pairs []data.Pair) []data.Pair {
	srcs, tgts := sides(pairs)
	srcs, tgts = b.ApplyAll(srcs), b.ApplyAll(tgts)
	out := make([]data.Pair, len(pairs))
	for i, p := range pairs {
		p.Src, p.Tgt = srcs[i], tgts[i]
		out[i] = p
	}
	return out
}

func sides(pairs []data.Pair) (src, tgt [][]string) {
	for _, p := range pairs {
		src = append(src, p.Src)
		tgt = append(tgt, p.Tgt)
	}
	return src, tgt
}

// trimMetrics drops from the metrics log at path the records of steps after step (and a last line cut short by
// a crash), which a run resumed from a checkpoint of that step logs again: the log then follows the run that
// the weights went through. The log is rewritten through a temporary file; a missing log is left missing.
func trimMetrics(path string, step int) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	var kept bytes.Buffer
	var read int
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := data.ReadLine(br) // a line of at most data.MaxLineBytes: the log is not read whole
		if err != nil && err != io.EOF {
			return fmt.Errorf("metrics: %s line %d: %w", path, n, err)
		}
		read += len(line)
		var rec struct {
			Step *int `json:"step"`
		}
		if strings.HasSuffix(line, "\n") && json.Unmarshal([]byte(line), &rec) == nil && (rec.Step == nil || *rec.Step <= step) {
			kept.WriteString(line)
		}
		if err == io.EOF {
			break
		}
	}
	if kept.Len() == read {
		return nil
	}
	err = checkpoint.WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(kept.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("metrics: rewrite after step %d: %w", step, err)
	}
	return nil
}
