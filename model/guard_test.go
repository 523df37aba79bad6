package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// TestCheckResumeRefusesArchitectureAndAppliesTrainingKeys is a table of resumed configurations: keys that fix
// the model or its vocabularies are refused with their old and new values, keys that shape batches only at an
// epoch boundary, training keys are reported as changes, and a run with nothing left to do is refused.
func TestCheckResumeRefusesArchitectureAndAppliesTrainingKeys(t *testing.T) {
	midEpoch := Progress{Epoch: 1, Batch: 7, Step: 20}
	boundary := Progress{Epoch: 2, Batch: 0, Step: 26}
	cases := []struct {
		name        string
		edit        func(*Config)
		prog        Progress
		wantErr     []string // substrings of the error; nil: no error
		wantChanges []string
	}{
		{"emb", func(c *Config) { c.Model.Emb = 16 }, midEpoch, []string{"model.emb is 128 in the checkpoint, 16 now"}, nil},
		{"cell", func(c *Config) { c.Model.Cell = "gru" }, boundary, []string{"model.cell is lstm in the checkpoint, gru now"}, nil},
		{"self-attention layers", func(c *Config) { c.Model.SelfAttentionLayers = 1 }, boundary,
			[]string{"model.self_attention_layers is 0 in the checkpoint, 1 now"}, nil},
		{"vocabulary keys, all named", func(c *Config) { c.Data.Lowercase = false; c.Data.MinFreq = 1; c.Data.MaxVocab = 500 },
			boundary, []string{"data.lowercase", "data.min_freq is 2 in the checkpoint, 1 now", "data.max_vocab is 0 in the checkpoint, 500 now"}, nil},
		{"subword keys", func(c *Config) { c.Data.Subword = SubwordBPE; c.Data.Merges = 8000 }, boundary,
			[]string{"data.subword is none in the checkpoint, bpe now", "data.merges is 0 in the checkpoint, 8000 now"}, nil},
		{"subword none spelled empty", func(c *Config) { c.Data.Subword = "" }, midEpoch, nil, []string{}},
		{"batch mid-epoch", func(c *Config) { c.Data.Batch = 16 }, midEpoch, []string{"data.batch is 64 in the checkpoint, 16 now", "epoch 2 (batch 7)"}, nil},
		{"seed mid-epoch", func(c *Config) { c.Train.Seed = 9 }, midEpoch, []string{"train.seed"}, nil},
		{"batch at an epoch boundary", func(c *Config) { c.Data.Batch = 16 }, boundary, nil, []string{"data.batch 64 → 16"}},
		{"training keys", func(c *Config) { c.Train.LR = 5e-4; c.Train.Clip = 5; c.Train.Epochs = 12 }, midEpoch, nil,
			[]string{"train.epochs 10 → 12", "train.lr 0.001 → 0.0005", "train.clip 1 → 5"}},
		{"nothing changed", func(c *Config) {}, midEpoch, nil, []string{}},
		{"epochs already done", func(c *Config) { c.Train.Epochs = 2 }, boundary, []string{"completed 2 epochs", "nothing left to do"}, nil},
		{"steps already done", func(c *Config) { c.Train.MaxSteps = 20 }, midEpoch, []string{"max_steps is 20", "step 20"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wanted := Small()
			c.edit(&wanted)
			changes, err := CheckResume(Small(), wanted, c.prog)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("accepted, want an error mentioning %q", c.wantErr)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range changes {
				got = append(got, ch.String())
			}
			if strings.Join(got, "; ") != strings.Join(c.wantChanges, "; ") {
				t.Fatalf("changes %q, want %q", got, c.wantChanges)
			}
		})
	}
}

// TestValidateNamesEverySettingOutOfRange sets one key at a time to a value outside its range.
func TestValidateNamesEverySettingOutOfRange(t *testing.T) {
	cases := []string{
		"model.emb=0", "model.enc_hidden=-3", "model.dec_hidden=100000", "model.attn_dim=0", "model.cell=rnn",
		"model.attention=dot-product", "model.self_attention_layers=9", "model.self_attention_layers=-1", "model.dropout=1", "model.dropout=-0.1", "data.min_freq=0", "data.max_vocab=-5",
		"data.max_vocab=3", "data.max_len=0", "data.batch=0", "data.bucket_chunk=0", "data.round_len=0", "data.memory_mb=-1",
		"train.epochs=0", "train.epochs=-1", "train.max_steps=-1", "train.lr=0", "train.lr=NaN", "train.lr=100",
		"train.clip=-1", "train.clip=+Inf", "train.log_every=0", "train.save_every=-1", "train.threads=-1",
		"train.threads=-3", "train.threads=1000", "train.graph_cache=0", "train.max_bad_steps=0",
		"decode.max_len=0", "decode.batch=-1", "data.subword=sentencepiece", "data.merges=100",
	}
	for _, set := range cases {
		t.Run(set, func(t *testing.T) {
			cfg := Small()
			if err := cfg.Set(set); err != nil {
				t.Fatal(err)
			}
			key, _, _ := strings.Cut(set, "=")
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), key) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, key)
			}
			if !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "only") && !strings.Contains(err.Error(), "unknown") {
				t.Fatalf("error %q does not say what is valid", err)
			}
		})
	}
	if err := Small().Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
}

// TestLoadConfigSpeaksOfKeysAndLines checks that YAML problems name the file, the right line and the config
// key, never a Go type.
func TestLoadConfigSpeaksOfKeysAndLines(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "# a comment\nmodel:\n  emb: 16\n  embedding_size: 3\n", "line 4: unknown key model.embedding_size"},
		{"unknown section", "model:\n  emb: 16\nmodle:\n  emb: 3\n", "line 3: unknown section \"modle\""},
		{"wrong type", "train:\n  epochs: 3\n  lr: fast\n", "line 3: train.lr wants a number, got \"fast\""},
		{"integer wanted", "data:\n  batch: 1.5\n", "line 2: data.batch wants an integer"},
		{"list instead of value", "model:\n  emb: [1, 2]\n", "line 2: model.emb wants an integer, found a list"},
		{"section not a mapping", "model: 3\n", "line 1: section model"},
		{"range checked too", "train:\n  clip: -1\n", "train.clip is -1"},
		{"bad indentation", "model:\n  emb: 16\n bad: 3\n", "line 3: did not find expected key"},
		{"missing colon", "model:\n  emb: 16\ntrain\n  lr: 3\n", "line 3:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.yaml") {
				t.Fatalf("LoadConfig: %v, want the file name and %q", err, c.want)
			}
			if strings.Contains(err.Error(), "model.ModelConfig") || strings.Contains(err.Error(), "float64") {
				t.Fatalf("error %q speaks of Go types", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "empty.yaml")
	os.WriteFile(path, []byte("# nothing\n"), 0o644)
	if cfg, _, err := LoadConfig(path); err != nil || cfg != Default() {
		t.Fatalf("an empty config file: %v, %+v", err, cfg)
	}
}

// poisonToken makes token's source embedding NaN, so any batch holding it has a non-finite loss.
func poisonToken(m *Seq2Seq[float32], token string) {
	row := m.Params.Get("src_emb").Data[m.SrcVocab.ID(token)*m.Cfg.Emb:][:m.Cfg.Emb]
	for i := range row {
		row[i] = float32(math.NaN())
	}
}

// TestNonFiniteStepIsSkipped checks that a batch with a non-finite loss changes no weight and no optimizer
// state, that a clean batch afterwards is applied, and that such a model cannot be saved.
func TestNonFiniteStepIsSkipped(t *testing.T) {
	cfg := tinyConfig()
	pairs := []data.Pair{{Src: []string{"a", "b"}, Tgt: []string{"b", "a"}}, {Src: []string{"c", "d"}, Tgt: []string{"d", "c"}}}
	m, examples := tinySetup(t, cfg, pairs)
	poisonToken(m, "a")
	tr := NewTrainer(m, cfg.Train.LR, cfg.Train.Clip, 4)
	poisoned := data.MakeBatches(examples[:1], data.BatchOptions{BatchSize: 1}, nil)[0]
	clean := data.MakeBatches(examples[1:], data.BatchOptions{BatchSize: 1}, nil)[0]
	before := m.Params.ZerosLike()
	for i, p := range m.Params.List() {
		copy(before.List()[i].Data, p.Data)
	}
	res, err := tr.Step(&poisoned, rand.New(rand.NewPCG(1, 1)), dist.Single{})
	if err != nil || !res.Skipped {
		t.Fatalf("poisoned batch: %+v, %v; want Skipped", res, err)
	}
	for i, p := range m.Params.List() {
		for j, x := range p.Data {
			if math.Float32bits(x) != math.Float32bits(before.List()[i].Data[j]) {
				t.Fatalf("a skipped step changed %s[%d]", p.Name, j)
			}
		}
	}
	if tr.Optimizer.Steps != 0 {
		t.Fatalf("a skipped step advanced Adam to step %d", tr.Optimizer.Steps)
	}
	if res, err := tr.Step(&clean, rand.New(rand.NewPCG(1, 2)), dist.Single{}); err != nil || res.Skipped || tr.Optimizer.Steps != 1 {
		t.Fatalf("clean batch: %+v, %v, Adam step %d", res, err, tr.Optimizer.Steps)
	}
	path := filepath.Join(t.TempDir(), "nan.ckpt")
	err = Save(path, cfg, m, tr.Optimizer, Progress{})
	if err == nil || !strings.Contains(err.Error(), "src_emb") || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("Save of a NaN weight: %v, want a refusal naming src_emb", err)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("a refused save left a file: %v", statErr)
	}
}

// TestBadStepsInARowStopTraining poisons every batch: training must stop after train.max_bad_steps steps with
// an error saying so, log the skipped steps, and never write a checkpoint holding NaN.
func TestBadStepsInARowStopTraining(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.MaxBadSteps = 3
	cfg.Train.Epochs = 2
	m, examples := tinySetup(t, cfg, tinyCorpus(24, 5))
	for _, w := range strings.Fields("a b c d e f g h i j") {
		poisonToken(m, w)
	}
	path := filepath.Join(t.TempDir(), "m.ckpt")
	var log bytes.Buffer
	_, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: path, Metrics: &log})
	if err == nil || !strings.Contains(err.Error(), "3 steps in a row") || !strings.Contains(err.Error(), "max_bad_steps") {
		t.Fatalf("Train = %v, want a stop after 3 bad steps", err)
	}
	if !strings.Contains(err.Error(), "not finite; checkpoint not written") {
		t.Fatalf("Train = %v, want it to say that the NaN weights were not saved", err)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("a checkpoint of NaN weights was written: %v", statErr)
	}
	var bad int
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("metrics line %q is not JSON: %v", line, err)
		}
		if rec["loss"] != nil {
			t.Fatalf("a window of skipped steps logged loss %v, want null", rec["loss"])
		}
		bad += int(rec["bad_steps"].(float64))
	}
	if bad != 3 {
		t.Fatalf("metrics count %d bad steps, want 3\n%s", bad, log.String())
	}
}

// TestLoadValidatesTheHeaderBeforeAllocating writes checkpoints whose header asks for other sizes than the
// tensors hold — absurdly large ones among them — and checks that Load refuses each with a clear error.
func TestLoadValidatesTheHeaderBeforeAllocating(t *testing.T) {
	cfg := tinyConfig()
	m, _ := tinySetup(t, cfg, tinyCorpus(24, 1))
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ckpt")
	if err := Save(good, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(h map[string]any)
		want string
	}{
		{"huge embedding", func(h map[string]any) { h["config"].(map[string]any)["Model"].(map[string]any)["Emb"] = 1 << 30 }, "model.emb"},
		{"other width", func(h map[string]any) { h["config"].(map[string]any)["Model"].(map[string]any)["DecHidden"] = 40000 }, "the config implies"},
		{"bad config", func(h map[string]any) { h["config"].(map[string]any)["Data"].(map[string]any)["Batch"] = -1 }, "data.batch"},
		{"length penalty past its range", func(h map[string]any) { h["config"].(map[string]any)["Decode"].(map[string]any)["Alpha"] = 1e308 }, "decode.alpha is 1e+308"},
		{"merges of a model of words", func(h map[string]any) { h["bpe_merges"] = []any{[]any{"a", "b"}} }, "data.subword"},
		{"lexicon past the target vocabulary", func(h map[string]any) { h["lexicon"] = []any{[]any{4}, []any{5, 100000}} }, "lexicon: row 1 entry 1 is target id 100000"},
		// Issue #51's case 12: a lexicon of another shape than the vocabularies, which --shortlist would read.
		{"lexicon with fewer rows than source words", func(h map[string]any) { h["lexicon"] = []any{[]any{4}, []any{5}} },
			"lexicon: 2 source rows for a vocabulary of"},
		{"lexicon with more rows than source words", func(h map[string]any) { h["lexicon"] = lexiconRows(len(h["src_vocab"].([]any))+1, nil) },
			"source rows for a vocabulary of"},
		{"lexicon with an id twice in a row", func(h map[string]any) { h["lexicon"] = lexiconRows(len(h["src_vocab"].([]any)), []any{4, 5, 4}) },
			"lexicon: row 0 holds target id 4 twice"},
		{"lexicon with a row longer than a lexicon keeps", func(h map[string]any) {
			for i := range 60 {
				h["tgt_vocab"] = append(h["tgt_vocab"].([]any), fmt.Sprintf("zz%d", i))
			}
			var long []any
			for id := range 51 {
				long = append(long, id)
			}
			h["lexicon"] = lexiconRows(len(h["src_vocab"].([]any)), long)
		}, "lexicon: row 0 holds 51 target ids, more than the 50 a lexicon keeps"},
		{"bigger vocabulary", func(h map[string]any) {
			h["tgt_vocab"] = append(h["tgt_vocab"].([]any), "zz1", "zz2")
		}, "the config implies"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeEditedHeader(t, good, filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ckpt"), c.edit)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load = %v, want an error naming the file and %q", err, c.want)
			}
		})
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Load of a directory: %v", err)
	}
}

// TestResumeAfterInterruptedValidationValidatesFirst interrupts a run during its validation, and checks that
// the checkpoint marks the validation pending and that the resumed run does it before training on.
func TestResumeAfterInterruptedValidationValidatesFirst(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.Epochs = 2
	pairs := tinyCorpus(40, 3)
	m, examples := tinySetup(t, cfg, pairs)
	path := filepath.Join(t.TempDir(), "m.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel at the last step line of epoch 1 (5 batches): the check before the next step comes after the
	// epoch's validation has started, so the validation is what gets interrupted.
	first := &cancelAfter{n: 5, cancel: cancel}
	_, err := Train(ctx, TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: examples[:8], Model: m, Out: path, Metrics: first})
	var stopped *InterruptedError
	if !errors.As(err, &stopped) || stopped.Path != path {
		t.Fatalf("Train = %v, want an *InterruptedError naming %s", err, path)
	}
	ck, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !ck.Progress.ValidPending || ck.Progress.Epoch != 1 || ck.Progress.Batch != 0 {
		t.Fatalf("saved progress %+v, want epoch 1 done with its validation pending", ck.Progress)
	}
	var second bytes.Buffer
	if _, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: examples[:8], Model: ck.Model,
		Adam: ck.Adam, Progress: ck.Progress, Out: path, Metrics: &second}); err != nil {
		t.Fatal(err)
	}
	if firstLine, _, _ := strings.Cut(second.String(), "\n"); !strings.Contains(firstLine, `"event":"valid"`) || !strings.Contains(firstLine, `"epoch":1`) {
		t.Fatalf("the resumed run began with %s, want epoch 1's validation", firstLine)
	}
	if _, err := os.Stat(BestPath(path)); err != nil {
		t.Fatalf("no best checkpoint after the resumed validation: %v", err)
	}
}

// lexiconRows is a lexicon of n rows for a checkpoint's header, the first first and the others empty.
func lexiconRows(n int, first []any) []any {
	rows := make([]any, n)
	for i := range rows {
		rows[i] = []any{}
	}
	if n > 0 && first != nil {
		rows[0] = first
	}
	return rows
}

// writeEditedHeader writes to path the checkpoint good with its JSON header changed by edit, and returns path.
func writeEditedHeader(t *testing.T, good, path string, edit func(map[string]any)) string {
	t.Helper()
	f, err := checkpoint.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(f.Header, &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	if f.Header, err = json.Marshal(h); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Write(path, f); err != nil {
		t.Fatal(err)
	}
	return path
}
