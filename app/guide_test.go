package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/wordalign"
)

// TestTrainWithGuidedAlignment trains the tiny model, and a tiny Transformer guiding its alignment head, with the
// synthetic corpus's gold links as train.guided_alignment: the metrics log the guided-alignment loss beside the
// translation loss, and it falls.
func TestTrainWithGuidedAlignment(t *testing.T) {
	for _, arch := range []string{model.TypeRNN, model.TypeTransformer} {
		t.Run(arch, func(t *testing.T) {
			dir := t.TempDir()
			train, _ := writeCorpus(t, dir, 3)
			cfg := tinyTrainConfig()
			if arch == model.TypeTransformer {
				m := &cfg.Model
				m.Type, m.DModel, m.Heads, m.FF, m.Layers, m.TiedEmbeddings, m.AlignmentHead = model.TypeTransformer, 16, 2, 32, 2, true, 2
			}
			cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = filepath.Join(dir, "train.align"), 1
			cfg.Train.Epochs, cfg.Train.MaxSteps, cfg.Train.LogEvery, cfg.Train.LR = 60, 240, 4, 1e-2
			out := filepath.Join(dir, "g.ckpt")
			var stdout bytes.Buffer
			if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), "guided alignment: links from "+cfg.Train.GuidedAlignment) {
				t.Errorf("the run does not say it is guided:\n%s", stdout.String())
			}
			guided := guidedLosses(t, filepath.Join(dir, "g.metrics.jsonl"))
			if !falls(guided) {
				t.Fatalf("guided-alignment loss over the run: %v; want the last three windows' below half the first three's", guided)
			}
		})
	}
}

// guidedLosses returns the guided-alignment loss of every step record of the metrics file at path.
func guidedLosses(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var guided []float64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["event"] != "step" {
			continue
		}
		g, ok := rec["guided_loss"].(float64)
		if _, hasLoss := rec["loss"].(float64); !ok || !hasLoss {
			t.Fatalf("step record without loss and guided_loss: %v", rec)
		}
		guided = append(guided, g)
	}
	return guided
}

// falls reports whether a loss logged at least six times, positive at first, ends (the mean of the last three
// windows) below half of where it began (the first three's).
func falls(losses []float64) bool {
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	n := len(losses)
	return n >= 6 && losses[0] > 0 && mean(losses[n-3:]) < 0.5*mean(losses[:3])
}

// TestGuidedAlignmentRefusesBadLinksAndSettings: a links file of another length than the corpus, a link beyond
// its pair, an attention that cannot be guided and a Transformer without model.alignment_head are errors that
// say what is wrong and where.
func TestGuidedAlignmentRefusesBadLinksAndSettings(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 4)
	raw, err := os.ReadFile(filepath.Join(dir, "train.align"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	short := filepath.Join(dir, "short.align")
	if err := os.WriteFile(short, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	beyond := filepath.Join(dir, "beyond.align")
	lines[2] = "0-0 99-1\n"
	if err := os.WriteFile(beyond, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file, attention string
		want                  []string
	}{
		{"fewer lines", short, "additive", []string{"short.align has 199 lines and the training corpus 200"}},
		{"link beyond its pair", beyond, "additive", []string{"beyond.align line 3", "99-1"}},
		{"local attention", filepath.Join(dir, "train.align"), "local", []string{"model.attention local cannot be guided", "additive"}},
		{"multi-head attention", filepath.Join(dir, "train.align"), "multi-head", []string{"model.attention multi-head cannot be guided"}},
		{"hard attention", filepath.Join(dir, "train.align"), "hard", []string{"model.attention hard cannot be guided"}},
		{"transformer without an alignment head", filepath.Join(dir, "train.align"), "", []string{"model.alignment_head"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyTrainConfig()
			cfg.Model.Attention, cfg.Train.GuidedAlignment, cfg.Train.MaxSteps = c.attention, c.file, 1
			if c.attention == "" {
				m := &cfg.Model
				m.Type, m.Attention, m.DModel, m.Heads, m.FF = model.TypeTransformer, "additive", 16, 2, 32
			}
			_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: filepath.Join(dir, c.name+".ckpt"), Stdout: &bytes.Buffer{}})
			if err == nil {
				t.Fatal("trained")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// appendLines appends one line to each of the files at paths.
func appendLines(t *testing.T, paths []string, lines ...string) {
	t.Helper()
	for k, path := range paths {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(lines[k] + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestGuidedSubwordsSpreadWordLinks: with data.subword bpe, the links of the words attend reads are spread
// over their subwords. Two lines are added to the synthetic corpus: one whose 35-letter source word (letters
// found nowhere else, so it stays one subword a letter) passes the word length filter and fails the subword
// one, and after it one whose words are two and three letters found nowhere else: "αβ γδε" → "ζη θικ"
// with links 0-0 1-1 0-1 becomes α@@ β γ@@ δ@@ ε → ζ@@ η θ@@ ι@@ κ with the 19 links worked out by hand
// below, at the pair that line became once the line before was dropped. Every pair's links are those of its
// line spread by the subwords BPE.Split gives its words, within the pair, and a tiny model trains on them with
// its guided-alignment loss falling.
func TestGuidedSubwordsSpreadWordLinks(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 3)
	gold := filepath.Join(dir, "train.align")
	files := []string{train.Src, train.Tgt, gold}
	appendLines(t, files, "the ЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеж dog", "der hund", "0-0 2-1")
	appendLines(t, files, "αβ γδε", "ζη θικ", "0-0 1-1 0-1")
	const handLine = 202
	// α@@ β are source pieces 0 1, γ@@ δ@@ ε 2 3 4; ζ@@ η target pieces 0 1, θ@@ ι@@ κ 2 3 4. 0-0 links {0,1}×{0,1},
	// 1-1 {2,3,4}×{2,3,4}, 0-1 {0,1}×{2,3,4}.
	hand, err := align.ParsePharaoh("0-0 0-1 0-2 0-3 0-4 1-0 1-1 1-2 1-3 1-4 2-2 2-3 2-4 3-2 3-3 3-4 4-2 4-3 4-4", false)
	if err != nil {
		t.Fatal(err)
	}

	cfg := tinyTrainConfig()
	cfg.Data.Subword, cfg.Data.Merges = model.SubwordBPE, 500
	cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = gold, 1
	cfg.Train.Epochs, cfg.Train.MaxSteps, cfg.Train.LogEvery, cfg.Train.LR = 60, 240, 4, 1e-2
	req := TrainRequest{Config: cfg, Train: train, Out: filepath.Join(dir, "g.ckpt"), Stdout: &bytes.Buffer{}}
	ctx := context.Background()
	links, err := readGuideLinks(ctx, req, cfg, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	corpus, subwords, guide, err := readTrainingCorpus(ctx, req, cfg, nil, 1, links)
	if err != nil {
		t.Fatal(err)
	}
	defer corpus.Close()
	if corpus.Report.TooLong != 1 || corpus.Report.Total != handLine || len(corpus.Lines) != corpus.Pairs.Len() {
		t.Fatalf("%s with %d lines for %d pairs; want the line of the long word alone dropped", corpus.Report, len(corpus.Lines), corpus.Pairs.Len())
	}
	goldLines := readLinksFile(t, gold)
	srcText, tgtText := readLinesOf(t, train.Src), readLinesOf(t, train.Tgt)
	tok := cfg.Data.Tokenizer()
	handPair := -1
	for i, line := range corpus.Lines {
		srcLen, tgtLen := corpus.Pairs.Lens(i)
		_, srcWordOf := subwords.Split(tok.Tokenize(srcText[line-1]))
		_, tgtWordOf := subwords.Split(tok.Tokenize(tgtText[line-1]))
		if len(srcWordOf) != srcLen || len(tgtWordOf) != tgtLen {
			t.Fatalf("pair %d (line %d): %d and %d subwords, BPE.Split gives %d and %d", i, line, srcLen, tgtLen, len(srcWordOf), len(tgtWordOf))
		}
		got := guide(i)
		for _, l := range got {
			if l.Src < 0 || l.Src >= srcLen || l.Tgt < 0 || l.Tgt >= tgtLen {
				t.Fatalf("pair %d (line %d) of %d×%d subwords has link %d-%d", i, line, srcLen, tgtLen, l.Src, l.Tgt)
			}
		}
		if want := align.SpreadLinks(goldLines[line-1], srcWordOf, tgtWordOf); !slices.Equal(got, want) {
			t.Fatalf("pair %d (line %d): links %v, want %v", i, line, got, want)
		}
		if line == handLine {
			handPair = i
		}
	}
	if handPair != corpus.Pairs.Len()-1 || !slices.Equal(guide(handPair), hand) {
		t.Fatalf("line %d is pair %d of %d with links %v; want the last, with %v", handLine, handPair, corpus.Pairs.Len(), guide(max(handPair, 0)), hand)
	}

	if _, err := Train(ctx, req); err != nil {
		t.Fatal(err)
	}
	if guided := guidedLosses(t, filepath.Join(dir, "g.metrics.jsonl")); !falls(guided) {
		t.Fatalf("guided-alignment loss over the run: %v; want the last three windows' below half the first three's", guided)
	}
}

// readLinksFile reads a Pharaoh file of 0-based links.
func readLinksFile(t *testing.T, path string) [][]align.Link {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	links, err := align.ReadPharaoh(f, path, false)
	if err != nil {
		t.Fatal(err)
	}
	return links
}

// TestGuidedAlignmentAuto trains with train.guided_alignment auto: the statistical aligner's links are written
// beside --out as NAME.align, the very file attend align --statistical writes for the corpus, and the run
// guides by them. A resumed run reads NAME.align as it is (not aligned again: a link beyond its pair put there is
// an error naming it, other links are guided by, and the file is left alone), and aligns the corpus again when
// it is gone. A follower process aligns the corpus itself and writes no file; NAME.align may not be an input.
func TestGuidedAlignmentAuto(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 5)
	cfg := tinyTrainConfig()
	cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight, cfg.Train.MaxSteps = model.GuideAuto, 1, 10
	out := filepath.Join(dir, "g.ckpt")
	links := filepath.Join(dir, "g.align")
	ctx := context.Background()

	// A follower aligns, guides and writes nothing of the links.
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &bytes.Buffer{}, Group: follower{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(links); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a follower process wrote %s (%v)", links, err)
	}

	var stdout bytes.Buffer
	if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the statistical aligner (grow-diag-final-and) linked 200 sentence pairs", "links written to " + links,
		"guided alignment: links from " + links} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the run does not say %q:\n%s", want, stdout.String())
		}
	}
	written, err := os.ReadFile(links)
	if err != nil {
		t.Fatal(err)
	}
	var statistical bytes.Buffer
	opts, err := wordalign.ModelOptions(wordalign.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AlignStatistical(ctx, StatisticalAlignRequest{Corpus: train, Tokenizer: data.NewRegexTokenizer(true),
		Options: opts, Sym: align.GrowDiagFinalAnd, Output: &statistical}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, statistical.Bytes()) || len(written) < 1000 {
		t.Fatalf("%s (%d bytes) is not what attend align --statistical writes for the corpus (%d bytes)", links, len(written), statistical.Len())
	}
	sum := sha256.Sum256(written)
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Progress.GuideFile != links || ck.Progress.GuideSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("the checkpoint keeps links %q with SHA-256 %q; want %q, %x", ck.Progress.GuideFile, ck.Progress.GuideSHA256, links, sum)
	}

	resume := func(steps int) (string, error) {
		var log bytes.Buffer
		more := func(c *model.Config) error { c.Train.MaxSteps = steps; return nil }
		_, err := Train(ctx, TrainRequest{Config: cfg, Overrides: more, Train: train, Out: out, Resume: out, Stdout: &log})
		return log.String(), err
	}
	// A link beyond its pair put in NAME.align: the resumed run reads the file, and says where it is wrong.
	lines := strings.SplitAfter(string(written), "\n")
	lines[2] = "0-0 99-1\n"
	broken := strings.Join(lines, "")
	if err := os.WriteFile(links, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := resume(20)
	if err == nil || !strings.Contains(err.Error(), "g.align line 3") || !strings.Contains(log, "not aligned again") {
		t.Fatalf("resumed with a link beyond its pair in %s: %v\n%s", links, err, log)
	}
	if raw, _ := os.ReadFile(links); string(raw) != broken {
		t.Fatalf("a resumed run rewrote %s", links)
	}
	// Other links (the generator's own): the resumed run guides by them, says the file changed, leaves it alone.
	other, err := os.ReadFile(filepath.Join(dir, "train.align"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, written) {
		t.Fatal("the generator's links are the aligner's: the test cannot tell them apart")
	}
	if err := os.WriteFile(links, other, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(links)
	if err != nil {
		t.Fatal(err)
	}
	if log, err = resume(20); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"links of the run from " + links + " (not aligned again)", links + " has changed since the run wrote it"} {
		if !strings.Contains(log, want) {
			t.Errorf("the resumed run does not say %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "linked 200 sentence pairs") {
		t.Errorf("the resumed run aligned the corpus again:\n%s", log)
	}
	after, err := os.Stat(links)
	if raw, _ := os.ReadFile(links); err != nil || !bytes.Equal(raw, other) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("a resumed run rewrote %s", links)
	}
	otherSum := sha256.Sum256(other)
	if ck, err = model.Load(out); err != nil || ck.Progress.GuideSHA256 != hex.EncodeToString(otherSum[:]) || ck.Progress.Step != 20 {
		t.Fatalf("the resumed run's checkpoint (%v): step %d, links' SHA-256 %q; want 20 and the file's %x", err, ck.Progress.Step, ck.Progress.GuideSHA256, otherSum)
	}
	// Gone: the resumed run aligns the corpus again, says so, and writes the file anew.
	if err := os.Remove(links); err != nil {
		t.Fatal(err)
	}
	if log, err = resume(30); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, links+", the statistical aligner's links of the run, is missing; aligning the training corpus again") ||
		!strings.Contains(log, "linked 200 sentence pairs") {
		t.Errorf("the resumed run does not say that it aligned the corpus again:\n%s", log)
	}
	if raw, err := os.ReadFile(links); err != nil || !bytes.Equal(raw, written) {
		t.Fatalf("%s written again (%v) is not the aligner's links", links, err)
	}

	// NAME.align beside --out may not be an input.
	src := filepath.Join(dir, "c.align")
	if err := os.WriteFile(src, statistical.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Train(ctx, TrainRequest{Config: cfg, Train: Corpus{Src: src, Tgt: train.Tgt}, Out: filepath.Join(dir, "c.ckpt"), Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "the links of train.guided_alignment auto "+src+" is also --src") {
		t.Fatalf("--out c.ckpt with --src c.align: %v", err)
	}
}
