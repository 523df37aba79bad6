package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
)

// trainPunct trains, through the binary, a small model on a toy English→French corpus whose white-space words
// attend's tokenizer splits ("Mr.", "doesn't", "l'homme", "cat."), and returns its checkpoint.
func trainPunct(t *testing.T, dir string) string {
	t.Helper()
	var src, tgt strings.Builder
	subjects := [][2]string{{"Mr. Smith", "M. Smith"}, {"Mrs. Brown", "Mme Brown"}, {"the man", "l'homme"}, {"l'homme", "l'homme"}}
	verbs := [][2]string{{"sees", "voit"}, {"doesn't see", "ne voit pas"}, {"don't like", "n'aime pas"}}
	objects := [][2]string{{"the cat", "le chat"}, {"l'homme", "l'homme"}, {"Mr. Smith's book", "le livre de M. Smith"}, {"the house", "la maison"}}
	for k := range 3 {
		for _, s := range subjects {
			for _, v := range verbs {
				for _, o := range objects {
					end := []string{".", "!", "?"}[k]
					fmt.Fprintf(&src, "%s %s %s%s\n", s[0], v[0], o[0], end)
					fmt.Fprintf(&tgt, "%s %s %s %s\n", s[1], v[1], o[1], end)
				}
			}
		}
	}
	writeFile(t, filepath.Join(dir, "train.en"), src.String())
	writeFile(t, filepath.Join(dir, "train.fr"), tgt.String())
	ckpt := filepath.Join(dir, "punct.ckpt")
	stdout, stderr, code := run(t, "", "train", "--config", "../../configs/demo.yaml",
		"--src", filepath.Join(dir, "train.en"), "--tgt", filepath.Join(dir, "train.fr"), "--out", ckpt, "--max-steps", "120",
		"--set", "model.emb=16", "--set", "model.enc_hidden=16", "--set", "model.dec_hidden=16", "--set", "model.attn_dim=16",
		"--set", "train.lr=0.01", "--set", "train.log_every=50", "--no-progress")
	if code != 0 {
		t.Fatalf("train exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return ckpt
}

// attentionRecord is a line of translate --attention, or a heat map's JSON.
type attentionRecord struct {
	Source, Output []string
	Attention      [][]float64
}

func readRecords(t *testing.T, path string) []attentionRecord {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []attentionRecord
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	for dec.More() {
		var r attentionRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestTranslateAlignsTheWordsOfTheLines: translate --alignments links the white-space words of the input line
// and of the written output ("Mr." and "l'homme." one word each, on both sides), and --attention has those
// words and a row per output word and </s>, "</s>" last among them; --token-level gives the model's tokens.
func TestTranslateAlignsTheWordsOfTheLines(t *testing.T) {
	dir := t.TempDir()
	ckpt := trainPunct(t, dir)
	lines := []string{"Mr. Smith and Mrs. Brown don't like l'homme today.", "l'homme doesn't see Mr. Smith's book!", "Mrs. Brown sees the cat?"}
	input := filepath.Join(dir, "in.en")
	writeFile(t, input, strings.Join(lines, "\n")+"\n")
	for _, beam := range []string{"1", "4"} {
		out, links, attn := filepath.Join(dir, "out"+beam), filepath.Join(dir, "align"+beam), filepath.Join(dir, "attn"+beam+".jsonl")
		if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--output", out, "--alignments", links,
			"--attention", attn, "--beam", beam); code != 0 {
			t.Fatalf("translate exited %d: %s", code, stderr)
		}
		outText, _ := os.ReadFile(out)
		outLines := strings.Split(strings.TrimSuffix(string(outText), "\n"), "\n")
		f, err := os.Open(links)
		if err != nil {
			t.Fatal(err)
		}
		written, err := align.ReadPharaoh(f, links, false)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		recs := readRecords(t, attn)
		glued := 0
		for k, line := range lines {
			src, hyp := strings.Fields(line), strings.Fields(outLines[k])
			for _, l := range written[k] {
				if l.Src >= len(src) || l.Tgt >= len(hyp) {
					t.Errorf("beam %s line %d: link %d-%d outside %d input and %d output words (%q)", beam, k+1, l.Src, l.Tgt, len(src), len(hyp), outLines[k])
				}
			}
			if len(written[k]) < len(hyp) {
				t.Errorf("beam %s line %d: %d links for %d output words: every word has an argmax", beam, k+1, len(written[k]), len(hyp))
			}
			r := recs[k]
			rows := hyp
			if len(r.Attention) > len(hyp) {
				rows = append(slices.Clone(hyp), data.EOSToken)
			}
			if !slices.Equal(r.Source, src) || !slices.Equal(r.Output, rows) || len(r.Attention) != len(rows) || len(r.Attention[0]) != len(src) {
				t.Errorf("beam %s line %d: attention of %q → %q (%d rows), want %q → %q", beam, k+1, r.Source, r.Output, len(r.Attention), src, rows)
			}
			for _, w := range hyp {
				if len(data.NewRegexTokenizer(true).Tokenize(w)) > 1 {
					glued++
				}
			}
		}
		if glued == 0 {
			t.Errorf("beam %s: no output word of several tokens in %q", beam, outLines)
		}
	}
	// --token-level: the model's tokens, "mr" and "." apart.
	attn := filepath.Join(dir, "tokens.jsonl")
	if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--attention", attn, "--token-level"); code != 0 {
		t.Fatalf("translate --token-level exited %d: %s", code, stderr)
	}
	for k, r := range readRecords(t, attn) {
		if want := data.NewRegexTokenizer(true).Tokenize(lines[k]); !slices.Equal(r.Source, want) {
			t.Errorf("--token-level line %d: source %q, want the tokens %q", k+1, r.Source, want)
		}
	}
}

// TestHeatmapDrawsWhatTranslateWrites: heatmap --beam N draws the sentence translate --beam N writes, with the
// same JSON as translate --attention (words, "</s>" labelling its row, weights); greedy search (--beam 1) draws
// other sentences for some lines, so the beam matters.
func TestHeatmapDrawsWhatTranslateWrites(t *testing.T) {
	dir := t.TempDir()
	ckpt := trainPunct(t, dir)
	lines := []string{"Mr. Smith doesn't see l'homme.", "the man don't like Mr. Smith's book!", "Mrs. Brown sees the house?",
		"l'homme sees the cat.", "Mr. Smith's cat doesn't see Mrs. Brown!", "the house sees the man?", "the cat"}
	input := filepath.Join(dir, "in.en")
	writeFile(t, input, strings.Join(lines, "\n")+"\n")
	drawn := map[string][]attentionRecord{}
	for _, beam := range []string{"1", "3"} {
		attn := filepath.Join(dir, "attn"+beam+".jsonl")
		if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--tokenized", "--attention", attn, "--beam", beam); code != 0 {
			t.Fatalf("translate exited %d: %s", code, stderr)
		}
		gallery := filepath.Join(dir, "maps"+beam)
		if _, stderr, code := run(t, "", "heatmap", "--model", ckpt, "--input", input, "--tokenized", "--out-dir", gallery, "--beam", beam); code != 0 {
			t.Fatalf("heatmap exited %d: %s", code, stderr)
		}
		translated := readRecords(t, attn)
		for k := range lines {
			m := readRecords(t, filepath.Join(gallery, fmt.Sprintf("%04d.json", k+1)))[0]
			tr := translated[k]
			if !slices.Equal(m.Source, tr.Source) || !slices.Equal(m.Output, tr.Output) || !closeMatrices(m.Attention, tr.Attention) {
				t.Fatalf("beam %s line %d: heat map %q → %q %v, translate --attention %q → %q %v", beam, k+1, m.Source, m.Output, m.Attention, tr.Source, tr.Output, tr.Attention)
			}
			drawn[beam] = append(drawn[beam], m)
		}
	}
	differ := 0
	for k := range lines {
		if !slices.Equal(drawn["1"][k].Output, drawn["3"][k].Output) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("greedy search and a beam of 3 drew the same sentences: the test tells nothing")
	}
	// One sentence, --text: the same as the translation of that line alone.
	one := filepath.Join(dir, "one.json")
	if _, stderr, code := run(t, "", "heatmap", "--model", ckpt, "--text", lines[1], "--out", one, "--beam", "3", "--tokenized"); code != 0 {
		t.Fatalf("heatmap --text exited %d: %s", code, stderr)
	}
	stdout, stderr, code := run(t, lines[1]+"\n", "translate", "--model", ckpt, "--beam", "3", "--tokenized")
	if code != 0 {
		t.Fatalf("translate exited %d: %s", code, stderr)
	}
	if got := readRecords(t, one)[0].Output; strings.Join(got, " ") != strings.TrimSpace(stdout)+" "+data.EOSToken {
		t.Fatalf("heatmap --text --beam 3 drew %q, translate --beam 3 wrote %q", got, stdout)
	}
}

// closeMatrices says whether two matrices have the same shape and weights within 1e-6.
func closeMatrices(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for r := range a {
		if len(a[r]) != len(b[r]) {
			return false
		}
		for i := range a[r] {
			if math.Abs(a[r][i]-b[r][i]) > 1e-6 {
				return false
			}
		}
	}
	return true
}
