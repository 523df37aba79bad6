package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/lexicon"
)

// tinyCorpus is a reversal task over a 10-word vocabulary: every target is its source backwards, so attention
// must run right to left.
func tinyCorpus(n int, seed uint64) (pairs []data.Pair) {
	rng := rand.New(rand.NewPCG(seed, 0))
	words := strings.Fields("a b c d e f g h i j")
	for i := 0; i < n; i++ {
		src := make([]string, 2+rng.IntN(4))
		for j := range src {
			src[j] = words[rng.IntN(len(words))]
		}
		tgt := make([]string, len(src))
		for j := range src {
			tgt[len(src)-1-j] = src[j]
		}
		pairs = append(pairs, data.Pair{Src: src, Tgt: tgt, Line: i + 1})
	}
	return pairs
}

func tinyConfig() Config {
	cfg := Small()
	cfg.Model = ModelConfig{Emb: 16, EncHidden: 32, DecHidden: 32, AttnDim: 16, Cell: "lstm", Attention: "mlp", Window: 3, Heads: 4, Temperature: 1, Dropout: 0}
	cfg.Data = DataConfig{Lowercase: true, MinFreq: 1, MaxLen: 20, Batch: 8, BucketChunk: 4, RoundLen: 1}
	cfg.Train = TrainConfig{Epochs: 1000, LR: 0.01, Clip: 1, Seed: 3, LogEvery: 1, Threads: 1, GraphCache: 8, MaxBadSteps: 10,
		Precision: kernels.PrecisionFloat32} // float32 products, bit for bit, as before train.precision
	return cfg
}

func tinySetup(t testing.TB, cfg Config, pairs []data.Pair) (*Seq2Seq[float32], []data.Example) {
	var src, tgt [][]string
	for _, p := range pairs {
		src, tgt = append(src, p.Src), append(tgt, p.Tgt)
	}
	m, err := New[float32](cfg.Model, data.BuildVocab(src, 1, 0), data.BuildVocab(tgt, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(cfg.Train.Seed, 0)))
	return m, data.EncodeExamples(pairs, m.SrcVocab, m.TgtVocab)
}

func exactMatch(m *Seq2Seq[float32], examples []data.Example) float64 {
	right := 0
	for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: 16}, nil) {
		for r, h := range m.Greedy(&b, 20) {
			if fmt.Sprint(h.Tokens) == fmt.Sprint(examples[b.Index[r]].Tgt) {
				right++
			}
		}
	}
	return float64(right) / float64(len(examples))
}

// TestTinyCorpusIsLearned trains on 24 reversal pairs until greedy decoding reproduces every training target,
// with the attention's query before and (with input feeding, as OpenNMT-py) after the LSTM reads the previous
// word.
func TestTinyCorpusIsLearned(t *testing.T) {
	t.Run("attend_after_input=false", func(t *testing.T) { tinyCorpusIsLearned(t, tinyConfig().Model, 400) })
	after := tinyConfig().Model
	after.AttendAfterInput, after.InputFeeding = true, true
	t.Run("attend_after_input=true input_feeding=true", func(t *testing.T) { tinyCorpusIsLearned(t, after, 150) })
}

func tinyCorpusIsLearned(t *testing.T, mc ModelConfig, steps int) {
	cfg := tinyConfig()
	cfg.Model = mc
	cfg.Train.MaxSteps = steps
	m, examples := tinySetup(t, cfg, tinyCorpus(24, 1))
	if acc := exactMatch(m, examples); acc > 0.2 {
		t.Fatalf("untrained model already gets %.0f%% right: the task is too easy to show learning", 100*acc)
	}
	_, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: filepath.Join(t.TempDir(), "tiny.ckpt")})
	if err != nil {
		t.Fatal(err)
	}
	if acc := exactMatch(m, examples); acc < 1 {
		t.Fatalf("training exact match %.1f%% after %d steps, want 100%%", 100*acc, cfg.Train.MaxSteps)
	}
}

// TestCheckpointRoundTrip saves a partly trained model, for every score function, and checks that the loaded one
// has bit-identical weights and optimizer moments, translates identically and gives the identical loss on the
// next step.
func TestCheckpointRoundTrip(t *testing.T) {
	for _, attention := range append(align.Names(), "mlp") {
		t.Run(attention, func(t *testing.T) { checkpointRoundTrip(t, attention, 0, 1, false, false) })
	}
	t.Run("additive with 2 self-attention layers", func(t *testing.T) { checkpointRoundTrip(t, "additive", 2, 1, false, false) })
	t.Run("additive with 2 recurrent layers", func(t *testing.T) { checkpointRoundTrip(t, "additive", 0, 2, false, false) })
	t.Run("additive attending after the input", func(t *testing.T) { checkpointRoundTrip(t, "additive", 0, 1, true, false) })
	t.Run("additive with full-context alignment, guided", func(t *testing.T) { checkpointRoundTrip(t, "additive", 0, 1, true, true) })
}

// checkpointRoundTrip is TestCheckpointRoundTrip for one model; full gives it full-context alignment, trained by
// guided alignment toward diagonal links.
func checkpointRoundTrip(t *testing.T, attention string, selfAttention, layers int, after, full bool) {
	cfg := tinyConfig()
	cfg.Model.Attention = attention
	cfg.Model.SelfAttentionLayers = selfAttention
	cfg.Model.Layers = layers
	cfg.Model.AttendAfterInput = after
	if full {
		cfg.Model.FullContextAlignment, cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = true, "diagonal.align", 1
	}
	cfg.Train.MaxSteps = 20
	cfg.Model.Dropout = 0.1
	pairs := tinyCorpus(24, 2)
	m, examples := tinySetup(t, cfg, pairs)
	lex, err := lexicon.Learn(examples, m.SrcVocab.Size(), m.TgtVocab.Size(), lexicon.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	m.Lexicon = lex
	path := filepath.Join(t.TempDir(), "m.ckpt")
	opts := TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: path}
	if full {
		opts.Guide = func(i int) []align.Link {
			var links []align.Link
			for j := range min(len(examples[i].Src), len(examples[i].Tgt)) {
				links = append(links, align.Link{Src: j, Tgt: j})
			}
			return links
		}
	}
	if _, err := Train(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if full && !slices.ContainsFunc(m.Decoder.AlignW.Data, func(v float32) bool { return v != 0 }) {
		t.Fatal("guided training left the alignment weight at 0")
	}
	ck, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ck.Model.Lexicon, m.Lexicon) {
		t.Fatalf("lexicon after save and load %v, want %v", ck.Model.Lexicon, m.Lexicon)
	}
	if ck.Config != cfg {
		t.Fatalf("loaded config differs: %v", Diff(cfg, ck.Config))
	}
	if ck.Progress.Step != 20 || ck.Adam.Steps != 20 {
		t.Fatalf("loaded progress step %d, adam step %d; want 20 and 20", ck.Progress.Step, ck.Adam.Steps)
	}
	for i, p := range m.Params.List() {
		q := ck.Model.Params.List()[i]
		if p.Name != q.Name || !bitsEqual(p.Data, q.Data) {
			t.Fatalf("parameter %s differs after save and load", p.Name)
		}
	}
	trA, trB := NewTrainer(m, cfg.Train.LR, 1, 1), NewTrainer(ck.Model, cfg.Train.LR, 1, 1)
	// Saving what was loaded must give the same bytes: weights, Adam moments, vocabularies and progress all
	// round-trip exactly.
	again := filepath.Join(t.TempDir(), "again.ckpt")
	if err := Save(again, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
		t.Fatal(err)
	}
	if a, b := readFile(t, path), readFile(t, again); !bytes.Equal(a, b) {
		t.Fatalf("re-saved checkpoint differs from the original (%d and %d bytes)", len(a), len(b))
	}
	if exactMatch(m, examples) != exactMatch(ck.Model, examples) {
		t.Fatal("translations differ after save and load")
	}
	b := data.MakeBatches(examples, data.BatchOptions{BatchSize: 8}, nil)[0]
	ra, err := trA.Gradients(&b, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := trB.Gradients(&b, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if ra.Loss != rb.Loss {
		t.Fatalf("next-step loss %v before saving, %v after loading", ra.Loss, rb.Loss)
	}
}

// TestCheckpointWithoutAttendAfterInputAttendsAsBefore loads a checkpoint whose header lacks
// model.attend_after_input, as those written before the key existed: its model must attend with s_{t-1}, as they
// were trained to, and translate as the model that was saved.
func TestCheckpointWithoutAttendAfterInputAttendsAsBefore(t *testing.T) {
	cfg := tinyConfig()
	m, examples := tinySetup(t, cfg, tinyCorpus(24, 1))
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.ckpt")
	if err := Save(saved, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	old := writeEditedHeader(t, saved, filepath.Join(dir, "old.ckpt"), func(h map[string]any) {
		mc := h["config"].(map[string]any)["Model"].(map[string]any)
		if _, ok := mc["AttendAfterInput"]; !ok {
			t.Fatalf("the header's model config has no AttendAfterInput to remove: %v", mc)
		}
		delete(mc, "AttendAfterInput")
	})
	ck, err := Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Config.Model.AttendAfterInput {
		t.Fatal("a checkpoint without model.attend_after_input loads attending after the input")
	}
	b := data.MakeBatches(examples, data.BatchOptions{BatchSize: len(examples)}, nil)[0]
	if got, want := fmt.Sprint(ck.Model.Greedy(&b, 20)), fmt.Sprint(m.Greedy(&b, 20)); got != want {
		t.Fatalf("translations of the loaded model\n%s\nof the saved one\n%s", got, want)
	}
}

func readFile(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cancelAfter is a metrics writer that cancels a context once it has seen n step lines: an interruption at a
// known step.
type cancelAfter struct {
	bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"event":"step"`)) {
		c.n--
		if c.n == 0 {
			c.cancel()
		}
	}
	return c.Buffer.Write(p)
}

// TestResumeReproducesUninterruptedRun interrupts training mid-epoch, resumes from the checkpoint, and checks
// that the loss curve and the final weights equal those of an uninterrupted run bit for bit, on one worker and on
// two (resumed on two again).
func TestResumeReproducesUninterruptedRun(t *testing.T) {
	for _, arch := range []string{TypeRNN, TypeTransformer} {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/workers=%d", arch, workers), func(t *testing.T) { testResumeReproducesUninterruptedRun(t, arch, workers) })
		}
	}
}

func testResumeReproducesUninterruptedRun(t *testing.T, arch string, workers int) {
	cfg := tinyConfig()
	if arch == TypeTransformer {
		cfg.Model = tinyTransformer(cfg.Model)
	}
	cfg.Train.Epochs = 3
	cfg.Model.Dropout = 0.2
	pairs := tinyCorpus(40, 3) // 5 batches an epoch: the interruption at step 7 falls inside epoch 2

	whole, examples := tinySetup(t, cfg, pairs)
	var wholeLog bytes.Buffer
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: whole, Workers: workers,
		Out: filepath.Join(t.TempDir(), "whole.ckpt"), Metrics: &wholeLog}); err != nil {
		t.Fatal(err)
	}

	part, _ := tinySetup(t, cfg, pairs)
	path := filepath.Join(t.TempDir(), "part.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	first := &cancelAfter{n: 7, cancel: cancel}
	_, err := Train(ctx, TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: part, Workers: workers, Out: path, Metrics: first})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted", err)
	}
	ck, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Progress.Step != 7 || ck.Progress.Epoch != 1 || ck.Progress.Batch != 2 {
		t.Fatalf("saved progress %+v, want step 7 = epoch 1 batch 2", ck.Progress)
	}
	var second bytes.Buffer
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: ck.Model, Adam: ck.Adam, Workers: workers,
		Progress: ck.Progress, Out: path, Metrics: &second}); err != nil {
		t.Fatal(err)
	}
	if got, want := losses(first.String()+second.String()), losses(wholeLog.String()); got != want {
		t.Fatalf("loss curve with resume:\n%s\nwithout:\n%s", got, want)
	}
	for i, p := range whole.Params.List() {
		if !bitsEqual(p.Data, ck.Model.Params.List()[i].Data) {
			t.Fatalf("parameter %s differs between resumed and uninterrupted runs", p.Name)
		}
	}
}

// losses extracts the step and loss fields of the step lines of a metrics log.
func losses(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"event":"step"`) {
			continue
		}
		i := strings.Index(line, `"loss":`)
		j := strings.Index(line, `"step":`)
		out = append(out, line[j:j+strings.IndexAny(line[j:], ",}")]+" "+line[i:i+strings.IndexAny(line[i:], ",}")])
	}
	return strings.Join(out, "\n")
}

// checkpointWatch is a metrics writer that, at each validation record, notes the step of the checkpoint then
// on disk at path.
type checkpointWatch struct {
	t      *testing.T
	path   string
	onDisk map[int]int // validated step -> step of the checkpoint on disk when its record was written
}

func (w *checkpointWatch) Write(p []byte) (int, error) {
	var rec struct {
		Event string `json:"event"`
		Step  int    `json:"step"`
	}
	if err := json.Unmarshal(p, &rec); err != nil {
		w.t.Errorf("metrics line %q: %v", p, err)
	}
	if rec.Event == "valid" {
		w.onDisk[rec.Step] = -1
		if ck, err := Load(w.path); err == nil {
			w.onDisk[rec.Step] = ck.Progress.Step
		}
	}
	return len(p), nil
}

// TestValidationComesBeforeItsStepsCheckpoint saves every step and validates every 2 steps and at epoch ends,
// and checks that when a validation of step S is logged no checkpoint of S is on disk yet. A checkpoint saved
// before its step's validation is the one a kill right after the validation leaves behind: the resumed run
// either validates S again, logging it twice, or (mid-epoch) never takes that validation into its best loss,
// learning-rate decay and patience.
func TestValidationComesBeforeItsStepsCheckpoint(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.Epochs, cfg.Train.SaveEvery, cfg.Train.ValidEvery = 2, 1, 2
	pairs := tinyCorpus(40, 3) // 5 batches an epoch: epoch ends at steps 5 and 10, mid-epoch validations at 2, 4, 6, 8
	m, examples := tinySetup(t, cfg, pairs)
	path := filepath.Join(t.TempDir(), "v.ckpt")
	watch := &checkpointWatch{t: t, path: path, onDisk: map[int]int{}}
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: examples[:8], Model: m,
		Out: path, Metrics: watch}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{2, 4, 5, 6, 8, 10} {
		disk, ok := watch.onDisk[s]
		if !ok {
			t.Errorf("step %d was not validated; validations (step: checkpoint on disk then): %v", s, watch.onDisk)
		} else if disk >= s {
			t.Errorf("step %d was validated with the checkpoint of step %d already on disk", s, disk)
		}
	}
}

// TestMetricsEpochMeansTheSameOnStepsAndValidations trains 2 epochs of 5 batches, validating every 2 steps and
// at each epoch's end, and checks that "epoch" is the epoch of the record's step (from 1) on step and
// validation records alike, and "epochs_done" the epochs complete after it: a validation at step 2 is in epoch
// 1 with none done, the one at step 5 ends epoch 1, the one at step 6 is in epoch 2.
func TestMetricsEpochMeansTheSameOnStepsAndValidations(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.Epochs, cfg.Train.ValidEvery = 2, 2
	m, examples := tinySetup(t, cfg, tinyCorpus(40, 3)) // 5 batches an epoch
	var log bytes.Buffer
	out := filepath.Join(t.TempDir(), "e.ckpt")
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: examples[:8], Model: m, Out: out, Metrics: &log}); err != nil {
		t.Fatal(err)
	}
	type where struct{ epoch, done int }
	want := map[int]where{1: {1, 0}, 2: {1, 0}, 4: {1, 0}, 5: {1, 1}, 6: {2, 1}, 8: {2, 1}, 10: {2, 2}}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec struct {
			Event      string `json:"event"`
			Step       int    `json:"step"`
			Epoch      *int   `json:"epoch"`
			EpochsDone *int   `json:"epochs_done"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Epoch == nil || rec.EpochsDone == nil {
			t.Fatalf("record without epoch or epochs_done: %s", line)
		}
		w, ok := want[rec.Step]
		if !ok {
			w = where{(rec.Step-1)/5 + 1, (rec.Step - 1) / 5}
		}
		if got := (where{*rec.Epoch, *rec.EpochsDone}); got != w {
			t.Errorf("%s record of step %d: epoch %d, epochs_done %d; want %d and %d", rec.Event, rec.Step, got.epoch, got.done, w.epoch, w.done)
		}
		seen[rec.Event]++
	}
	if seen["step"] != 10 || seen["valid"] != 6 {
		t.Errorf("%d step and %d validation records, want 10 and 6 (at steps 2, 4, 5, 6, 8, 10)", seen["step"], seen["valid"])
	}
}

// epochStarts is a Recorder that keeps what each EpochStart said.
type epochStarts struct {
	nopRecorder
	got []EpochStart
}

func (r *epochStarts) EpochStart(e EpochStart) { r.got = append(r.got, e) }

// TestEpochStartSaysWhereTheRunEnds: the Recorder hears at each epoch's start the step the run ends at —
// train.max_steps when it comes before the last epoch's end (not the end of the epoch), else the batches of
// every epoch — and the step the epoch starts from, for a resumed run too.
func TestEpochStartSaysWhereTheRunEnds(t *testing.T) {
	for _, c := range []struct {
		name            string
		epochs, maxStep int
		want            []EpochStart
	}{
		{"max_steps within the first epoch", 3, 3, []EpochStart{{Epoch: 1, Epochs: 3, Batches: 5, Steps: 3}}},
		{"max_steps in the second epoch", 3, 7, []EpochStart{{Epoch: 1, Epochs: 3, Batches: 5, Steps: 7}, {Epoch: 2, Epochs: 3, Batches: 5, Step: 5, Steps: 7}}},
		{"epochs", 2, 0, []EpochStart{{Epoch: 1, Epochs: 2, Batches: 5, Steps: 10}, {Epoch: 2, Epochs: 2, Batches: 5, Step: 5, Steps: 10}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Train.Epochs, cfg.Train.MaxSteps = c.epochs, c.maxStep
			m, examples := tinySetup(t, cfg, tinyCorpus(40, 3)) // 5 batches an epoch
			rec := &epochStarts{}
			if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: filepath.Join(t.TempDir(), "e.ckpt"), Recorder: rec}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rec.got) != fmt.Sprint(c.want) {
				t.Fatalf("EpochStart heard %+v, want %+v", rec.got, c.want)
			}
		})
	}
	// A run resumed within its second epoch starts from the saved step.
	cfg := tinyConfig()
	cfg.Train.Epochs, cfg.Train.MaxSteps = 3, 7
	m, examples := tinySetup(t, cfg, tinyCorpus(40, 3))
	out := filepath.Join(t.TempDir(), "r.ckpt")
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: out}); err != nil {
		t.Fatal(err)
	}
	ck, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Train.MaxSteps = 0
	rec := &epochStarts{}
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: ck.Model, Adam: ck.Adam, Progress: ck.Progress, Out: out, Recorder: rec}); err != nil {
		t.Fatal(err)
	}
	want := []EpochStart{{Epoch: 2, Epochs: 3, Batches: 5, Done: 2, Step: 7, Steps: 15}, {Epoch: 3, Epochs: 3, Batches: 5, Step: 10, Steps: 15}}
	if fmt.Sprint(rec.got) != fmt.Sprint(want) {
		t.Fatalf("the resumed run's EpochStart heard %+v, want %+v", rec.got, want)
	}
}

// tinyTransformer is m as a Transformer of two blocks each side, width 16, two heads, tied output layer.
func tinyTransformer(m ModelConfig) ModelConfig {
	m.Type, m.DModel, m.Heads, m.FF, m.Layers, m.TiedEmbeddings = TypeTransformer, 16, 2, 32, 2, true
	return m
}
