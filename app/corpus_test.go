package app

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// writeLargerCorpus writes a synthetic corpus of n training pairs as one TSV file, large enough for a budget of
// a few KB to send it to disk.
func writeLargerCorpus(t *testing.T, dir string, n int) Corpus {
	t.Helper()
	tr, _, _ := synth.Split(n, 1, 1, 7)
	var b strings.Builder
	for _, p := range tr {
		b.WriteString(p.Src + "\t" + p.Tgt + "\n")
	}
	path := filepath.Join(dir, "train.tsv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return Corpus{TSV: path}
}

// weights loads a checkpoint's weights and optimizer moments, in order.
func weights(t *testing.T, path string) [][]float32 {
	t.Helper()
	ck, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for _, p := range ck.Model.Params.List() {
		out = append(out, p.Data)
	}
	for _, p := range ck.Adam.M.List() {
		out = append(out, p.Data)
	}
	for _, p := range ck.Adam.V.List() {
		out = append(out, p.Data)
	}
	return out
}

// stepLosses is the losses of the step records of a metrics file, by step.
func stepLosses(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"event":"step"`) {
			i := strings.Index(line, `"loss":`)
			out = append(out, line[i:i+strings.IndexByte(line[i:], ',')])
		}
	}
	return out
}

// TestTrainOnDiskMatchesInMemory trains on a corpus kept on disk (a budget of 2 KB) and on the same corpus in
// memory: the same steps, losses and weights, and a run interrupted and resumed from the disk, with another
// budget, continues exactly as the uninterrupted runs.
func TestTrainOnDiskMatchesInMemory(t *testing.T) {
	dir := t.TempDir()
	train := writeLargerCorpus(t, dir, 1500)
	cfg := tinyTrainConfig()
	cfg.Train.Epochs, cfg.Train.LogEvery, cfg.Train.SaveEvery = 2, 1, 0
	cfg.Data.Batch = 32
	run := func(name string, memoryMB float64, maxSteps int, resume string) (string, string) {
		t.Helper()
		out := filepath.Join(dir, name+".ckpt")
		c := cfg
		c.Data.MemoryMB = memoryMB
		c.Train.MaxSteps = maxSteps
		var stdout bytes.Buffer
		req := TrainRequest{Config: c, Train: train, Out: out, Stdout: &stdout}
		if resume != "" {
			req.Out, req.Resume = resume, resume
			req.Overrides = func(cc *model.Config) error {
				cc.Data.MemoryMB, cc.Train.MaxSteps = memoryMB, maxSteps
				return nil
			}
			out = resume
		}
		if _, err := Train(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		return out, stdout.String()
	}
	memory, memLog := run("memory", 0, 0, "")
	disk, diskLog := run("disk", 2.0/1024, 0, "")
	if !strings.Contains(diskLog, "on disk in "+dir) || strings.Contains(memLog, "on disk") {
		t.Fatalf("the corpus is not on disk with a budget of 2 KB, or is without one:\n%s\n%s", diskLog, memLog)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".attend-corpus-*")); len(names) > 0 {
		t.Errorf("the corpus on disk is left behind: %v", names)
	}
	memLosses := stepLosses(t, strings.TrimSuffix(memory, ".ckpt")+".metrics.jsonl")
	if len(memLosses) < 60 || !slices.Equal(stepLosses(t, strings.TrimSuffix(disk, ".ckpt")+".metrics.jsonl"), memLosses) {
		t.Fatalf("losses on disk differ from those in memory (%d steps)", len(memLosses))
	}
	want := weights(t, memory)
	if !reflect.DeepEqual(weights(t, disk), want) {
		t.Fatal("weights trained on disk differ from those trained in memory")
	}
	// Both are what training on the examples read as strings, filtered and encoded as before ReadCorpus, in a
	// slice, gives.
	pairs, err := data.ReadTSV(train.TSV, cfg.Data.Tokenizer())
	if err != nil {
		t.Fatal(err)
	}
	pairs, _ = data.Filter(pairs, cfg.Data.MaxLen)
	srcs, tgts := sides(pairs)
	m, err := model.New[float32](cfg.Model, data.BuildVocab(srcs, cfg.Data.MinFreq, cfg.Data.MaxVocab), data.BuildVocab(tgts, cfg.Data.MinFreq, cfg.Data.MaxVocab))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(cfg.Train.Seed, 0)))
	ref := filepath.Join(dir, "slice.ckpt")
	// (On as many workers as attend train used: the same training, but float32 sums in another order.)
	if _, err := model.Train(context.Background(), model.TrainOptions{Config: cfg, Corpus: data.Examples(data.EncodeExamples(pairs, m.SrcVocab, m.TgtVocab)), Model: m, Out: ref,
		Workers: trainWorkers(cfg.Train)}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(weights(t, ref), want) {
		t.Fatal("weights trained on a corpus read as ids differ from those trained on the examples of the pairs read as strings")
	}

	// Interrupted within the first epoch, on disk; resumed in memory; then on disk with another budget.
	part, _ := run("part", 1.0/1024, 17, "")
	run("", 0, 40, part)
	run("", 3.0/1024, 0, part)
	if !reflect.DeepEqual(weights(t, part), want) {
		t.Fatal("the resumed run's weights differ from the uninterrupted run's")
	}
	if got := stepLosses(t, strings.TrimSuffix(part, ".ckpt")+".metrics.jsonl"); !slices.Equal(got, memLosses) {
		t.Fatalf("the resumed run's losses differ from the uninterrupted run's")
	}
}

// TestLexiconLearnedAfterTheCheckpoints: checkpoints written before the lexicon is ready have none (and the
// final one gets it once it is); a run resumed from one of them learns it again, trains exactly as the
// uninterrupted run, and ends with the same lexicon, which translate --shortlist uses.
func TestLexiconLearnedAfterTheCheckpoints(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 8)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.SaveEvery, cfg.Train.KeepLast = 6, 2, 10
	out := filepath.Join(dir, "m.ckpt")
	var stdout bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: valid, Out: out, Stdout: &stdout, lexiconAfterTraining: true}); err != nil {
		t.Fatal(err)
	}
	// Whether "lexicon: waiting for" is printed depends on whether the tiny lexicon is already learned when
	// training ends (it starts only then here), so only the line saying where it went is required.
	if !strings.Contains(stdout.String(), "added to "+out+" and "+model.BestPath(out)) {
		t.Errorf("the log does not say the lexicon was added to the last and the best checkpoints:\n%s", stdout.String())
	}
	for _, step := range []int{2, 4} {
		ck, err := model.Load(model.StepPath(out, step))
		if err != nil {
			t.Fatal(err)
		}
		if ck.Model.Lexicon != nil {
			t.Fatalf("the checkpoint of step %d, written before the lexicon was learned, has one", step)
		}
	}
	final, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	best, err := model.Load(model.BestPath(out))
	if err != nil {
		t.Fatal(err)
	}
	if final.Model.Lexicon == nil || best.Model.Lexicon == nil {
		t.Fatal("the last or the best checkpoint has no lexicon")
	}
	// The lexicon is the one attend lexicon learns for the model from the same corpus.
	ck, err := model.Load(model.StepPath(out, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LearnLexicon(context.Background(), ck, train, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(ck.Model.Lexicon.Best, final.Model.Lexicon.Best, slices.Equal) {
		t.Fatal("the lexicon learned beside training differs from attend lexicon's")
	}
	if _, err := TranslateTokens(context.Background(), final.Model, [][]string{{"a"}}, DecodeOptions{MaxLen: 5, Batch: 4,
		Shortlist: &lexicon.ShortlistSize{Frequent: 5, Best: 5}}); err != nil {
		t.Fatalf("translate with a shortlist: %v", err)
	}

	// Resume from step 4's checkpoint, which has no lexicon.
	resumed := filepath.Join(dir, "r.ckpt")
	raw, err := os.ReadFile(model.StepPath(out, 4))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(resumed, raw, 0o644)
	stdout.Reset()
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: valid, Out: resumed, Resume: resumed, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(weights(t, resumed), weights(t, out)) {
		t.Fatal("the run resumed from a checkpoint without a lexicon trains otherwise than the uninterrupted run")
	}
	r, err := model.Load(resumed)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model.Lexicon == nil || !slices.EqualFunc(r.Model.Lexicon.Best, final.Model.Lexicon.Best, slices.Equal) {
		t.Fatal("the resumed run's lexicon differs from the uninterrupted run's")
	}
}

// TestCorpusBudget: data.memory_mb, or a quarter of the machine's memory when it is 0.
func TestCorpusBudget(t *testing.T) {
	if got := corpusBudget(model.DataConfig{MemoryMB: 3}); got != 3<<20 {
		t.Errorf("3 MB: budget %d", got)
	}
	if got := corpusBudget(model.DataConfig{MemoryMB: 0.5}); got != 1<<19 {
		t.Errorf("0.5 MB: budget %d", got)
	}
	total := machineMemory()
	if runtime.GOOS == "linux" && total < 1<<26 {
		t.Fatalf("machine memory %d on Linux", total)
	}
	if total > 0 {
		if got := corpusBudget(model.DataConfig{}); got != total/MemoryShare {
			t.Errorf("default budget %d, want %d of %d", got, total/MemoryShare, total)
		}
	}
}

// TestThreadsDefaultToEveryCore: train.threads 0, the default, trains on every CPU.
func TestThreadsDefaultToEveryCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cfg := model.Default().Train
	if cfg.Threads != 0 {
		t.Fatalf("default train.threads %d, want 0", cfg.Threads)
	}
	if n := useThreads(&bytes.Buffer{}, &cfg); n != runtime.NumCPU() || runtime.GOMAXPROCS(0) != runtime.NumCPU() {
		t.Fatalf("threads %d, GOMAXPROCS %d on %d CPUs", n, runtime.GOMAXPROCS(0), runtime.NumCPU())
	}
	cfg.Threads = 1
	if n := useThreads(&bytes.Buffer{}, &cfg); n != 1 || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("train.threads 1: threads %d, GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}

// phaseLog is a Recorder that records the phases before training.
type phaseLog struct {
	nopRecorder
	mu     sync.Mutex
	events []string
}

func (l *phaseLog) add(e string) { l.mu.Lock(); l.events = append(l.events, e); l.mu.Unlock() }
func (l *phaseLog) StartPhase(name string, total int64, _ string) Phase {
	l.add("start " + name)
	return &loggedPhase{log: l, name: name, total: total}
}

type loggedPhase struct {
	log         *phaseLog
	name        string
	total, done int64
}

func (p *loggedPhase) Set(done int64) { p.done = done }
func (p *loggedPhase) Add(n int64)    { p.done += n }
func (p *loggedPhase) End() {
	if p.total > 0 && p.done != p.total {
		p.log.add("end " + p.name + " short of its total")
		return
	}
	p.log.add("end " + p.name)
}

// TestTrainShowsItsPhases: a Recorder that is a PhaseRecorder is shown each phase before training, and each
// phase is ended (a phase of known size at its total).
func TestTrainShowsItsPhases(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 9)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps = 1
	cfg.Data.Subword, cfg.Data.Merges = model.SubwordBPE, 20
	rec := &phaseLog{}
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: filepath.Join(dir, "m.ckpt"), Stdout: &bytes.Buffer{}, Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	want := []string{"start reading " + train.String(), "end reading " + train.String(), "start learning subword merges",
		"end learning subword merges", "start splitting words into subwords", "end splitting words into subwords"}
	if !slices.Equal(rec.events, want) {
		t.Fatalf("phases %q, want %q", rec.events, want)
	}
}
