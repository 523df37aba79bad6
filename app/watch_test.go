package app

import (
	"bufio"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// TestWatchWritesEveryValidationAndResumeKeepsThem trains the demo's model on a small synthetic corpus for 100
// steps, then resumes it to 200, validating every 50 steps with the default train.watch_sentences and the
// corpus's gold links as --valid-gold. Every validation leaves NAME.watch/STEP.json with the four watched
// sentences (the first three lines and one the seed draws), each with its greedy translation and an attention
// matrix of its shape; the pictures of the last train.keep_last validations are kept and decode as PNGs; the
// AER of the attention is logged in [0, 1] at every validation, and falls as the model learns.
func TestWatchWritesEveryValidationAndResumeKeepsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for about 15 seconds")
	}
	dir := t.TempDir()
	train, valid, test := synth.Split(8000, 60, 0, 1) // 250 steps an epoch: no validation at an epoch end
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	cfg := DemoConfig()
	cfg.Train.MaxSteps, cfg.Train.ValidEvery, cfg.Train.KeepLast = 100, 50, 2
	out := filepath.Join(dir, "w.ckpt")
	req := TrainRequest{Config: cfg, Out: out, Stdout: io.Discard, ValidGold: filepath.Join(dir, "valid.align"),
		Train: Corpus{Src: filepath.Join(dir, "train.src"), Tgt: filepath.Join(dir, "train.tgt")},
		Valid: Corpus{Src: filepath.Join(dir, "valid.src"), Tgt: filepath.Join(dir, "valid.tgt")}}
	if _, err := Train(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Resume, req.Overrides = out, func(c *model.Config) error { c.Train.MaxSteps = 200; return nil }
	if _, err := Train(context.Background(), req); err != nil {
		t.Fatal(err)
	}

	var aers []float64
	var fourth int
	for _, step := range []int{50, 100, 150, 200} {
		raw, err := os.ReadFile(filepath.Join(WatchDir(out), strconv.Itoa(step)+".json"))
		if err != nil {
			t.Fatalf("validation at step %d: %v", step, err)
		}
		var rec WatchRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if rec.Step != step || rec.ValidPPL == nil || rec.ValidAER == nil || *rec.ValidAER < 0 || *rec.ValidAER > 1 {
			t.Fatalf("step %d: record of step %d, ppl %v, AER %v", step, rec.Step, rec.ValidPPL, rec.ValidAER)
		}
		aers = append(aers, *rec.ValidAER)
		if len(rec.Sentences) != 4 {
			t.Fatalf("step %d: %d sentences, want 4", step, len(rec.Sentences))
		}
		var lines []int
		for _, s := range rec.Sentences {
			lines = append(lines, s.Line)
			if want := strings.Fields(valid[s.Line-1].Src); !slices.Equal(s.Source, want) {
				t.Errorf("step %d line %d: source %q, want %q", step, s.Line, s.Source, want)
			}
			if err := s.Validate(); err != nil || len(s.Weights) == 0 {
				t.Errorf("step %d line %d: %d rows for %d output words: %v", step, s.Line, len(s.Weights), len(s.Output), err)
			}
			for k, name := range s.Images {
				f, err := os.Open(filepath.Join(WatchDir(out), name))
				if step < 150 {
					if err == nil {
						t.Errorf("step %d: %s kept beyond train.keep_last", step, name)
						f.Close()
					}
					continue
				}
				if err != nil {
					ls, _ := os.ReadDir(WatchDir(out))
					t.Fatalf("%v; the folder holds %v", err, ls)
				}
				_, err = png.Decode(bufio.NewReader(f))
				f.Close()
				if err != nil || k > 0 {
					t.Errorf("%s: %v (picture %d of a model without an alignment attention)", name, err, k)
				}
			}
		}
		if !slices.Equal(lines[:3], []int{1, 2, 3}) || lines[3] <= 3 || fourth != 0 && lines[3] != fourth {
			t.Errorf("step %d: lines %v, want 1, 2, 3 and the same later line at every validation", step, lines)
		}
		fourth = lines[3]
	}
	t.Logf("AER at steps 50, 100, 150, 200: %.3f", aers)
	if aers[len(aers)-1] >= aers[0] {
		t.Errorf("AER of the attention %v does not fall", aers)
	}
	metrics, err := os.ReadFile(strings.TrimSuffix(out, ".ckpt") + ".metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(metrics), `"valid_aer":`); n != 4 {
		t.Errorf("the metrics file has %d validations with an AER, want 4:\n%s", n, metrics)
	}
}

// TestWatchedPairsAreTheLinesTrainWatchSentencesNames: a count takes the first pairs with both sides and one
// drawn from the rest (all of them when there are fewer), a list takes its lines, and a line without a pair is
// an error naming the key.
func TestWatchedPairsAreTheLinesTrainWatchSentencesNames(t *testing.T) {
	pairs := []data.Pair{{Src: []string{"a"}, Tgt: []string{"A"}, Line: 1}, {Line: 2}, {Src: []string{"c"}, Tgt: []string{"C"}, Line: 3},
		{Src: []string{"d"}, Tgt: []string{"D"}, Line: 4}, {Src: []string{"e"}, Tgt: []string{"E"}, Line: 5}}
	for _, c := range []struct {
		setting string
		lines   []int // nil: an error
	}{
		{"0", []int{}}, {"", []int{}}, {"2", []int{1, 0}}, {"9", []int{1, 3, 4, 5}}, {"3,1", []int{3, 1}},
		{"2,6", nil}, {"1,2", nil}, {"1,,3", nil}, {"-1", nil}, {"two", nil},
	} {
		t.Run(c.setting, func(t *testing.T) {
			got, err := watchedPairs(model.TrainConfig{WatchSentences: c.setting, Seed: 1}, pairs, Corpus{Src: "v.src", Tgt: "v.tgt"})
			if c.lines == nil {
				if err == nil || !strings.Contains(err.Error(), "train.watch_sentences") {
					t.Fatalf("%v, want an error naming train.watch_sentences", err)
				}
				return
			}
			if err != nil || len(got) != len(c.lines) {
				t.Fatalf("%v, %v; want lines %v", got, err, c.lines)
			}
			for i, p := range got {
				if c.lines[i] != 0 && p.Line != c.lines[i] || c.lines[i] == 0 && p.Line < 3 {
					t.Errorf("pair %d is line %d, want %v (0: a line drawn after the first)", i, p.Line, c.lines)
				}
			}
		})
	}
}
