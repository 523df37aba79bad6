package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/metrics"
)

// TestEvalReadsStandardInputSeveralReferencesAndWritesJSON pipes the hypotheses in (--hyp -), gives two
// references of each sentence and asks for sacreBLEU's JSON: the figures are the metrics package's against both
// references, and the signature says nrefs:2.
func TestEvalReadsStandardInputSeveralReferencesAndWritesJSON(t *testing.T) {
	dir := t.TempDir()
	hyps := []string{"A man is riding a bike over a bridge.", "Two dogs play in the snow.", "He plays the guitar."}
	ref1 := []string{"A man rides his bicycle across a bridge.", "Two dogs are playing in the snow.", "A man is playing the guitar on stage."}
	ref2 := []string{"A man is riding a bicycle over a bridge.", "Two dogs play together in deep snow.", "He plays guitar."}
	r1, r2 := filepath.Join(dir, "ref1.txt"), filepath.Join(dir, "ref2.txt")
	writeFile(t, r1, strings.Join(ref1, "\n")+"\n")
	writeFile(t, r2, strings.Join(ref2, "\n")+"\n")
	tok := metrics.NewTokenizer13a()
	var bleu metrics.BLEUCounts
	var chrf metrics.ChrFCounts
	for i, h := range hyps {
		bleu = bleu.Add(metrics.SentenceBLEUCounts(tok.Tokenize(h), tok.Tokenize(ref1[i]), tok.Tokenize(ref2[i])))
		chrf = chrf.Add(metrics.SentenceChrFCounts(h, ref1[i], ref2[i]))
	}
	wantBLEU, wantChrF := metrics.BLEUFromCounts(bleu, metrics.SmoothExp), metrics.ChrFFromCounts(chrf)

	stdout, stderr, code := run(t, strings.Join(hyps, "\n")+"\n", "eval", "--hyp", "-", "--ref", r1, "--ref", r2, "--format", "json")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	var scores []map[string]any
	if err := json.Unmarshal([]byte(stdout), &scores); err != nil || len(scores) != 2 {
		t.Fatalf("not a list of two JSON objects (%v):\n%s", err, stdout)
	}
	for i, want := range []struct {
		name  string
		score float64
	}{{"BLEU", wantBLEU.Score}, {"chrF2", wantChrF.Score}} {
		s := scores[i]
		if s["name"] != want.name || math.Abs(s["score"].(float64)-math.Round(100*want.score)/100) > 1e-9 || s["nrefs"] != "2" ||
			!strings.HasPrefix(s["signature"].(string), "nrefs:2|") {
			t.Errorf("score %d: %v, want %s %.2f with nrefs 2", i, s, want.name, want.score)
		}
	}
	if v := scores[0]["verbose_score"]; v != strings.TrimPrefix(wantBLEU.String(), fmt.Sprintf("BLEU = %.2f ", wantBLEU.Score)) {
		t.Errorf("verbose_score %q, want the rest of %q", v, wantBLEU)
	}
	if single, _, _ := run(t, strings.Join(hyps, "\n")+"\n", "eval", "--hyp", "-", "--ref", r1, "--metrics", "bleu"); !strings.HasPrefix(single, "BLEU|nrefs:1|") {
		t.Errorf("one reference from standard input printed %q", single)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--hyp", "-", "--ref", "-"}, "only one of --hyp, --ref and --src can read standard input"},
		{[]string{"--hyp", "-", "--ref", r1, "--format", "xml"}, `--format is "xml"`},
		{[]string{"--hyp", r1, "--ref", r2, "--n-best", "2"}, "--n-best N writes the N best translations"},
	} {
		if _, stderr, code := run(t, "", append([]string{"eval"}, tt.args...)...); code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("eval %v: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestEvalWarnsWhenCaseOrTokenizationDiffer: lowercased or tokenized hypotheses against cased, detokenized
// references get a warning saying what to do; like against like gets none.
func TestEvalWarnsWhenCaseOrTokenizationDiffer(t *testing.T) {
	dir := t.TempDir()
	refs := []string{"A man's hat is red.", "Two dogs don't play.", "The cat sleeps, and dreams."}
	ref := filepath.Join(dir, "ref.txt")
	writeFile(t, ref, strings.Join(refs, "\n")+"\n")
	lower := strings.ToLower(strings.Join(refs, "\n")) + "\n"
	tokenized := "A man 's hat is red .\nTwo dogs do n't play .\nThe cat sleeps , and dreams .\n"
	for _, tt := range []struct {
		name, hyps string
		args       []string
		want       []string // in the warnings; none at all when empty
	}{
		{"lowercased", lower, nil, []string{"stdin has no capital letter but " + ref, "--tok-lc", "data.lowercase: false"}},
		{"lowercased, tok-lc with chrF", lower, []string{"--tok-lc"}, []string{"chrF counts every capital", "--metrics bleu"}},
		{"lowercased, tok-lc BLEU only", lower, []string{"--tok-lc", "--metrics", "bleu"}, nil},
		{"tokenized", tokenized, nil, []string{"stdin looks tokenized", "but " + ref + " does not", "detokenize", "--tok-lc"}},
		{"tokenized, tok-lc", tokenized, []string{"--tok-lc"}, nil},
		{"like against like", strings.Join(refs, "\n") + "\n", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, tt.hyps, append([]string{"eval", "--hyp", "-", "--ref", ref}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if len(tt.want) == 0 && strings.Contains(stderr, "warning") {
				t.Errorf("unexpected warning: %s", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}

// TestEvalWritesNBestLists: eval --n-best 2 --output writes each sentence's two best translations in translate's
// format, and scores the first of each.
func TestEvalWritesNBestLists(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, ref := filepath.Join(dir, "test.src"), filepath.Join(dir, "test.tgt")
	nbest, best := filepath.Join(dir, "nb.out"), filepath.Join(dir, "best.out")
	if _, stderr, code := run(t, "", "eval", "-m", ckpt, "--src", src, "--ref", ref, "--beam", "2", "--n-best", "2", "-o", nbest); code != 0 {
		t.Fatalf("eval --n-best exited %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "", "eval", "--model", ckpt, "--src", src, "--ref", ref, "--beam", "2", "--output", best); code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	nb, _ := os.ReadFile(nbest)
	one, _ := os.ReadFile(best)
	bestLines := strings.Split(strings.TrimSuffix(string(one), "\n"), "\n")
	lines := strings.Split(strings.TrimSuffix(string(nb), "\n"), "\n")
	if len(lines) != 2*len(bestLines) {
		t.Fatalf("%d n-best lines for %d sentences:\n%s", len(lines), len(bestLines), nb)
	}
	for k, line := range lines {
		f := strings.Split(line, " ||| ")
		if len(f) != 4 || f[0] != fmt.Sprint(k/2) || !strings.HasPrefix(f[2], "F0= ") {
			t.Fatalf("line %q is not 'i ||| text ||| F0= score ||| score'", line)
		}
		if k%2 == 0 && f[1] != bestLines[k/2] {
			t.Errorf("sentence %d: n-best list starts %q, the 1-best output is %q", k/2, f[1], bestLines[k/2])
		}
	}
}
