package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
	"github.com/attend-nmt/attend/synth"
)

// tinyTrainConfig is the demo config at toy widths: a couple of seconds of training.
func tinyTrainConfig() model.Config {
	cfg := DemoConfig()
	cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 8, 8, 8, 8
	cfg.Train.LogEvery = 5
	return cfg
}

// writeCorpus writes a small synthetic corpus to dir and returns its training and validation files.
func writeCorpus(t *testing.T, dir string, seed uint64) (train, valid Corpus) {
	t.Helper()
	tr, va, te := synth.Split(200, 20, 5, seed)
	if err := synth.WriteFiles(dir, tr, va, te); err != nil {
		t.Fatal(err)
	}
	return Corpus{Src: filepath.Join(dir, "train.src"), Tgt: filepath.Join(dir, "train.tgt")},
		Corpus{Src: filepath.Join(dir, "valid.src"), Tgt: filepath.Join(dir, "valid.tgt")}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(raw)
}

// TestTrainChecksSettingsAndPathsBeforeWork is a table of bad settings and output paths: each must fail before
// anything is written, with a message naming the setting, and leave the inputs as they were.
func TestTrainChecksSettingsAndPathsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 1)
	srcSum, tgtSum := fileSum(t, train.Src), fileSum(t, train.Tgt)
	cases := []struct {
		name string
		edit func(*TrainRequest)
		want string
	}{
		{"out is a directory", func(r *TrainRequest) { r.Out = dir }, "is a directory"},
		{"out is the source", func(r *TrainRequest) { r.Out = train.Src }, "is also --src"},
		{"out is the target through another path", func(r *TrainRequest) { r.Out = filepath.Join(dir, ".", "sub", "..", "train.tgt") }, "is also --tgt"},
		{"metrics is the validation source", func(r *TrainRequest) { r.MetricsPath = valid.Src }, "is also --valid-src"},
		{"best checkpoint would be the target", func(r *TrainRequest) {
			r.Out = filepath.Join(dir, "x.ckpt")
			os.Rename(train.Tgt, filepath.Join(dir, "x.best.ckpt"))
			r.Train.Tgt = filepath.Join(dir, "x.best.ckpt")
		}, "the best checkpoint"},
		{"zero epochs", func(r *TrainRequest) { r.Config.Train.Epochs = 0 }, "train.epochs is 0"},
		{"negative clip", func(r *TrainRequest) { r.Config.Train.Clip = -1 }, "train.clip"},
		{"too many threads", func(r *TrainRequest) { r.Config.Train.Threads = 1000 }, "train.threads is 1000"},
		{"unwritable directory", func(r *TrainRequest) { r.Out = "/proc/attend.ckpt" }, "not writable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := TrainRequest{Config: tinyTrainConfig(), Train: train, Valid: valid, Out: filepath.Join(dir, "m.ckpt"), Stdout: &bytes.Buffer{}}
			c.edit(&req)
			_, err := Train(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Train = %v, want an error mentioning %q", err, c.want)
			}
			if out := req.Stdout.(*bytes.Buffer).String(); out != "" {
				t.Fatalf("Train did work before failing:\n%s", out)
			}
			if req.Train.Tgt != train.Tgt {
				os.Rename(req.Train.Tgt, train.Tgt)
			}
			if fileSum(t, train.Src) != srcSum || fileSum(t, train.Tgt) != tgtSum {
				t.Fatal("the training corpus changed")
			}
			for _, p := range []string{filepath.Join(dir, "m.ckpt"), filepath.Join(dir, "m.metrics.jsonl")} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s was written", p)
				}
			}
		})
	}
}

// TestResumeRefusesModelChangesAndKeepsTheCheckpoint resumes with another embedding width: refused, naming the
// key and both values, and the checkpoint is left byte for byte. Then a new learning rate is accepted, reported
// once, and stored; the summary counts every epoch, the first run's included.
func TestResumeRefusesModelChangesAndKeepsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 2)
	out := filepath.Join(dir, "m.ckpt")
	cfg := tinyTrainConfig()
	cfg.Train.Epochs = 1
	var stdout bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout.String(), "best") && !strings.Contains(stdout.String(), "no best checkpoint") {
		t.Fatalf("a run without validation announced a best checkpoint:\n%s", stdout.String())
	}
	before := fileSum(t, out)
	emb := func(c *model.Config) error { c.Model.Emb = 16; c.Train.Epochs = 2; return nil }
	_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Resume: out, Overrides: emb, Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "model.emb is 8 in the checkpoint, 16 now") {
		t.Fatalf("resume with another width: %v", err)
	}
	if fileSum(t, out) != before {
		t.Fatal("a refused resume changed the checkpoint")
	}
	lr := func(c *model.Config) error { c.Train.LR = 1e-4; c.Train.Epochs = 2; return nil }
	stdout.Reset()
	sum, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Resume: out, Overrides: lr, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stdout.String(), "train.lr 0.003 → 0.0001"); n != 1 {
		t.Fatalf("the learning-rate change is reported %d times:\n%s", n, stdout.String())
	}
	if sum.Epochs != 2 || !strings.Contains(stdout.String(), "done: ") || !strings.Contains(stdout.String(), " 2 epochs") {
		t.Fatalf("summary %+v / %s, want 2 epochs in all", sum, stdout.String())
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Config.Train.LR != 1e-4 || ck.Adam.LR != 1e-4 {
		t.Fatalf("stored learning rate %g, Adam's %g, want 1e-4", ck.Config.Train.LR, ck.Adam.LR)
	}
}

// TestResumeOnAnotherCorpusWarnsOfUnknownWords resumes on a corpus of other words.
func TestResumeOnAnotherCorpusWarnsOfUnknownWords(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 3)
	out := filepath.Join(dir, "m.ckpt")
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps = 3
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.tsv")
	os.WriteFile(other, []byte(strings.Repeat("zwei neue wörter\ttwo new words\n", 20)), 0o644)
	var stdout bytes.Buffer
	more := func(c *model.Config) error { c.Train.MaxSteps = 4; return nil }
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: Corpus{TSV: other}, Out: out, Resume: out,
		Overrides: more, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "warning: 100.0% of the words of "+other) {
		t.Fatalf("no warning about unknown words:\n%s", stdout.String())
	}
}

// TestResumeWithOtherArithmeticSaysSo trains with one worker, checks that the checkpoint records how its sums
// were computed, and resumes it: with the same arithmetic silently, and with two workers (which sum the gradient
// in another order) with a note naming both, since the run cannot then repeat an uninterrupted one bit for bit.
func TestResumeWithOtherArithmeticSaysSo(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 5)
	out := filepath.Join(dir, "m.ckpt")
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.Workers = 2, 1
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	products, err := cfg.Train.Products()
	if err != nil {
		t.Fatal(err)
	}
	one := trainArithmetic(ck.Model, cfg, 1, products)
	if ck.Progress.Arithmetic != one || !strings.Contains(one, "1 worker") || !strings.Contains(one, backend.Active()) {
		t.Fatalf("the checkpoint records the arithmetic %q, want %q", ck.Progress.Arithmetic, one)
	}
	resume := func(steps, workers int) string {
		t.Helper()
		var stdout bytes.Buffer
		more := func(c *model.Config) error { c.Train.MaxSteps, c.Train.Workers = steps, workers; return nil }
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Resume: out,
			Overrides: more, Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		return stdout.String()
	}
	if got := resume(3, 1); strings.Contains(got, "note: the checkpoint's steps were computed") {
		t.Fatalf("a resume with the same arithmetic has a note about it:\n%s", got)
	}
	two := trainArithmetic(ck.Model, cfg, 2, products)
	if got := resume(4, 2); !strings.Contains(got, "note: the checkpoint's steps were computed with "+one+", this run's with "+two) {
		t.Fatalf("a resume with two workers instead of one says nothing of it:\n%s", got)
	}
	if ck, err := model.Load(out); err != nil || ck.Progress.Arithmetic != two {
		t.Fatalf("after the resume with two workers the checkpoint records %q (%v), want %q", ck.Progress.Arithmetic, err, two)
	}
}

// TestTrainStopsOnCancelWhileReading cancels before training starts: nothing may be written.
func TestTrainStopsOnCancelWhileReading(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "m.ckpt")
	_, err := Train(ctx, TrainRequest{Config: tinyTrainConfig(), Train: train, Out: out, Stdout: &bytes.Buffer{}})
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "reading the training corpus") {
		t.Fatalf("Train with a cancelled context = %v, want ErrStopped while reading", err)
	}
	if _, statErr := os.Stat(out); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("a run stopped before training wrote a checkpoint")
	}
}

// follower is a process other than the lead of a training group (of one, so that nothing waits for sums).
type follower struct{ dist.Single }

func (follower) Rank() int { return 1 }

// TestTrainRemovesStaleTemporariesOfItsCheckpoints starts a run in a directory holding what a run killed while
// saving leaves behind: the lead removes the temporaries of --out, of the best checkpoint, of the metrics log
// and of NAME.align (train.guided_alignment auto), and nothing else; a follower process removes nothing.
func TestTrainRemovesStaleTemporariesOfItsCheckpoints(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	deadPID := strconv.Itoa(exited.Process.Pid)
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 5)
	out := filepath.Join(dir, "m.ckpt")
	stale := []string{".m.ckpt.tmp-" + deadPID + "-11", ".m.best.ckpt.tmp-" + deadPID + "-12",
		".m.metrics.jsonl.tmp-" + deadPID + "-15", ".m.align.tmp-" + deadPID + "-16"}
	kept := []string{".other.ckpt.tmp-" + deadPID + "-13", ".m.ckpt.tmp-" + strconv.Itoa(os.Getpid()) + "-14", "m.ckpt.notes"}
	for _, name := range append(append([]string{}, stale...), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps = 1

	var stdout bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout, Group: follower{}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(append([]string{}, stale...), kept...) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("a follower process removed %s", name)
		}
	}

	stdout.Reset()
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s is still there", name)
		}
		if !strings.Contains(stdout.String(), "removed "+path) {
			t.Errorf("the removal of %s is not reported:\n%s", name, stdout.String())
		}
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed", name)
		}
	}
}

// TestResumeKeepsValidatingOnTheRunsFiles is issue #28's case 15: a run resumed without --valid-* validates on
// the files it started with (their absolute paths are in the checkpoint, so another working directory does not
// matter) and says so; given files replace them, and are kept for the next resume; a stored file that is gone
// is a clear error before any work; NoValid turns validation off.
func TestResumeKeepsValidatingOnTheRunsFiles(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 6)
	t.Chdir(dir)
	out := filepath.Join(dir, "m.ckpt")
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps = 3
	steps := func(n int) func(*model.Config) error {
		return func(c *model.Config) error { c.Train.MaxSteps = n; return nil }
	}
	relative := Corpus{Src: "valid.src", Tgt: "valid.tgt"}
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: relative, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}

	t.Chdir(t.TempDir())
	var stdout bytes.Buffer
	sum, err := Train(context.Background(), TrainRequest{Config: cfg, Overrides: steps(6), Train: train, Out: out, Resume: out, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if want := "validating on " + valid.String() + " from the checkpoint\n"; !strings.Contains(stdout.String(), want) {
		t.Fatalf("resume does not say %q:\n%s", want, stdout.String())
	}
	if math.IsNaN(sum.ValidLoss) || !strings.Contains(stdout.String(), "checkpoints: ") {
		t.Fatalf("the resumed run did not validate: %+v\n%s", sum, stdout.String())
	}

	other := Corpus{Src: filepath.Join(dir, "other.src"), Tgt: filepath.Join(dir, "other.tgt")}
	for _, p := range [][2]string{{valid.Src, other.Src}, {valid.Tgt, other.Tgt}} {
		raw, _ := os.ReadFile(p[0])
		os.WriteFile(p[1], raw, 0o644)
	}
	stdout.Reset()
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Overrides: steps(9), Train: train, Valid: other, Out: out, Resume: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout.String(), "from the checkpoint") {
		t.Fatalf("given validation files, the resume still speaks of the checkpoint's:\n%s", stdout.String())
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if v := ck.Progress.ValidFiles; v.Src != other.Src || v.Tgt != other.Tgt || v.TSV != "" {
		t.Fatalf("checkpoint keeps validation files %+v, want %s", v, other)
	}

	os.Remove(other.Tgt)
	before := fileSum(t, out)
	stdout.Reset()
	_, err = Train(context.Background(), TrainRequest{Config: cfg, Overrides: steps(12), Train: train, Out: out, Resume: out, Stdout: &stdout})
	if err == nil || !strings.Contains(err.Error(), other.Tgt+" no longer exists") || !strings.Contains(err.Error(), "--valid-src") {
		t.Fatalf("resume with a validation file gone = %v, want an error naming it", err)
	}
	if fileSum(t, out) != before {
		t.Fatal("a refused resume changed the checkpoint")
	}

	sum, err = Train(context.Background(), TrainRequest{Config: cfg, Overrides: steps(12), Train: train, NoValid: true, Out: out, Resume: out, Stdout: &bytes.Buffer{}})
	if err != nil || !math.IsNaN(sum.ValidLoss) {
		t.Fatalf("resume with NoValid: %v, valid loss %g; want a run without validation", err, sum.ValidLoss)
	}
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: valid, NoValid: true, Out: filepath.Join(dir, "n.ckpt"),
		Stdout: &bytes.Buffer{}}); err == nil || !strings.Contains(err.Error(), "--no-valid") {
		t.Fatalf("NoValid with a validation corpus = %v, want an error", err)
	}
}

// TestTrainRefusesASecondRunOnItsOut holds the lock of --out as another run would: Train is refused before any
// work, naming the holder.
func TestTrainRefusesASecondRunOnItsOut(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 7)
	out := filepath.Join(dir, "m.ckpt")
	lock, err := checkpoint.TryLock(model.LockPath(out))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	var stdout bytes.Buffer
	_, err = Train(context.Background(), TrainRequest{Config: tinyTrainConfig(), Train: train, Out: out, Stdout: &stdout})
	if err == nil || !strings.Contains(err.Error(), "is being written by another attend run (process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("Train with --out locked = %v", err)
	}
	if stdout.Len() > 0 {
		t.Fatalf("Train did work before failing:\n%s", stdout.String())
	}
}

// TestUseThreads holds the process to 1 thread, to every CPU (0), and to the CPUs there are when asked for more,
// which it says in a note naming the setting.
func TestUseThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cpus := runtime.NumCPU()
	for _, c := range []struct{ asked, want int }{{1, 1}, {0, cpus}, {cpus + 3, cpus}} {
		var note bytes.Buffer
		if got := UseThreads(&note, c.asked, "--threads"); got != c.want || runtime.GOMAXPROCS(0) != c.want {
			t.Fatalf("UseThreads(%d) = %d with GOMAXPROCS %d; want %d", c.asked, got, runtime.GOMAXPROCS(0), c.want)
		}
		wantNote := c.asked > cpus
		if got := strings.Contains(note.String(), fmt.Sprintf("note: --threads %d is more than the", c.asked)); got != wantNote {
			t.Fatalf("UseThreads(%d) wrote %q", c.asked, note.String())
		}
	}
}

// TestTransformerWithoutWarmupWarns: model.type=transformer set on a recurrent preset (configs/demo.yaml:
// learning rate 3e-3, no warm-up) trains a Transformer that learns next to nothing; the run says so on stderr
// in one line, naming configs/transformer.yaml, before its first check. The Transformer preset, and a recurrent
// model without warm-up, start without a word.
func TestTransformerWithoutWarmupWarns(t *testing.T) {
	for _, c := range []struct {
		config, set string
		warn        bool
	}{{"demo.yaml", "model.type=transformer", true}, {"demo.yaml", "", false}, {"transformer.yaml", "", false}} {
		var stderr bytes.Buffer
		o := TrainOptions{Stderr: &stderr, TrainRequest: TrainRequest{ConfigFile: filepath.Join("..", "configs", c.config), Stdout: io.Discard}}
		if c.set != "" {
			o.Overrides = func(cfg *model.Config) error { return cfg.Set(c.set) }
		}
		if err := RunTrain(context.Background(), o); err == nil { // no corpus, no --out: refused after the warning
			t.Fatalf("%s %s: trained without a corpus", c.config, c.set)
		}
		got := stderr.String()
		if warned := strings.Contains(got, "warning: a Transformer") && strings.Contains(got, "configs/transformer.yaml") && strings.Count(got, "\n") == 1; warned != c.warn {
			t.Errorf("%s --set %q: stderr %q; want a one-line warning naming configs/transformer.yaml: %v", c.config, c.set, got, c.warn)
		}
	}
}

// TestTrainRefusesToReplaceAnotherRunsModel is issue #51's case 4: a run whose --out holds a trained model, and
// that does not continue it, is refused before any work with the two ways on (--resume, --overwrite), and so is
// one resumed from elsewhere into it and one that would replace another run's best checkpoint; Overwrite
// replaces them, and a run resumed from one of the run's own checkpoints goes ahead.
func TestTrainRefusesToReplaceAnotherRunsModel(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 3)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.KeepLast = 2, 2
	out, other := filepath.Join(dir, "m.ckpt"), filepath.Join(dir, "o.ckpt")
	ctx := context.Background()
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Valid: valid, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: other, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	sums := map[string][32]byte{}
	for _, p := range []string{out, model.BestPath(out), model.StepPath(out, 2), other} {
		sums[p] = fileSum(t, p)
	}
	unchanged := func() {
		t.Helper()
		for p, s := range sums {
			if fileSum(t, p) != s {
				t.Fatalf("%s changed", p)
			}
		}
	}
	refused := []struct {
		name string
		req  TrainRequest
		want []string
	}{
		{"a new run", TrainRequest{Out: out}, []string{"--out " + out + " holds a trained model", "`--resume " + out + "` continues it", "`--overwrite` replaces it"}},
		{"a run resumed from another", TrainRequest{Out: out, Resume: other, Overrides: func(c *model.Config) error { c.Train.MaxSteps = 4; return nil }}, []string{"--out " + out + " holds a trained model of another run", "`--overwrite`"}},
		{"another run's best", TrainRequest{Out: filepath.Join(dir, "b.ckpt"), Valid: valid}, []string{"the best checkpoint"}},
	}
	if err := os.Link(model.BestPath(out), filepath.Join(dir, "b.best.ckpt")); err != nil {
		t.Fatal(err)
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			req.Config, req.Train, req.Stdout = cfg, train, &bytes.Buffer{}
			_, err := Train(ctx, req)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
			unchanged()
		})
	}
	// A run resumed from the run's best checkpoint continues that run.
	more := func(c *model.Config) error { c.Train.MaxSteps = 3; return nil }
	if _, err := Train(ctx, TrainRequest{Config: cfg, Overrides: more, Train: train, Out: out, Resume: model.BestPath(out), Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatalf("resumed from the best checkpoint: %v", err)
	}
	var stdout bytes.Buffer
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: out, Overwrite: true, Stdout: &stdout}); err != nil {
		t.Fatalf("with Overwrite: %v", err)
	}
	if !strings.Contains(stdout.String(), "removed "+model.StepPath(out, 3)+", a step checkpoint of the run --overwrite replaces") {
		t.Errorf("the old run's step checkpoints are not removed:\n%s", stdout.String())
	}
	if steps, err := model.StepCheckpoints(out); err != nil || !slices.Equal(steps, []int{2}) {
		t.Errorf("step checkpoints %v (%v), want the new run's [2]", steps, err)
	}
}

// TestTrainReplacesOnlyItsOwnFilesBesideTheCheckpoint is issue #51's case 2 and its class: a file that attend
// did not write where a run writes one of its own beside --out (NAME.align of train.guided_alignment auto, the
// best checkpoint, the metrics log, the lock file, a step checkpoint) is refused before any work and left as
// it was, while the run's own NAME.align (its SHA-256 in the checkpoint) is replaced by a run that replaces the
// checkpoint.
func TestTrainReplacesOnlyItsOwnFilesBesideTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 4)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.KeepLast, cfg.Train.GuidedAlignment = 2, 1, model.GuideAuto
	ctx := context.Background()
	for _, name := range []string{"ua.align", "ub.best.ckpt", "uc.metrics.jsonl", "ud.lock", "ue.step-7.ckpt"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name[:2]+".ckpt")
		_, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Valid: valid, Out: out, Overwrite: true, Stdout: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), path+" is not ") || !strings.Contains(err.Error(), "move it away") {
			t.Errorf("%s: Train = %v, want a refusal naming it", name, err)
		}
		if raw, err := os.ReadFile(path); err != nil || string(raw) != "notes\n" {
			t.Errorf("%s changed: %q, %v", name, raw, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the refused run wrote %s", name, out)
		}
	}
	out := filepath.Join(dir, "g.ckpt")
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: out, Overwrite: true, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatalf("a run replacing its own links: %v", err)
	}
}
