package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/metrics"
)

// TestEvalScoresFilesLikeTheMetricsPackage scores two small files through the binary, both ways, and compares
// the printed figures with the metrics package's on the same text.
func TestEvalScoresFilesLikeTheMetricsPackage(t *testing.T) {
	dir := t.TempDir()
	hyps := []string{"The cat sat on the mat.", "A dog runs in the park, quickly!", "Two men don't talk."}
	refs := []string{"The cat sat on a mat.", "A dog is running in the park.", "Two men do not talk."}
	hypPath, refPath := filepath.Join(dir, "hyp.txt"), filepath.Join(dir, "ref.txt")
	writeFile(t, hypPath, strings.Join(hyps, "\n")+"\n")
	writeFile(t, refPath, strings.Join(refs, "\n")+"\n")

	stdout, stderr, code := run(t, "", "eval", "--hyp", hypPath, "--ref", refPath)
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	t13a := metrics.NewTokenizer13a()
	var h13, r13, hlc, rlc [][]string
	regex := data.NewRegexTokenizer(true)
	for i := range hyps {
		h13, r13 = append(h13, t13a.Tokenize(hyps[i])), append(r13, t13a.Tokenize(refs[i]))
		hlc, rlc = append(hlc, regex.Tokenize(hyps[i])), append(rlc, regex.Tokenize(refs[i]))
	}
	wantBLEU := metrics.CorpusBLEU(h13, r13, metrics.SmoothExp)
	wantLine := "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-"
	if !strings.Contains(stdout, wantLine) || !strings.Contains(stdout, strings.TrimPrefix(wantBLEU.String(), "BLEU = ")) {
		t.Fatalf("eval printed\n%s\nwant a line starting %q with %q", stdout, wantLine, wantBLEU)
	}
	wantChrF := fmt.Sprintf("= %.2f", metrics.ChrF(hyps, refs).Score)
	if !strings.Contains(stdout, "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:attend-") || !strings.Contains(stdout, wantChrF) {
		t.Fatalf("eval printed\n%s\nwant a chrF2 line %q", stdout, wantChrF)
	}

	stdout, stderr, code = run(t, "", "eval", "--hyp", hypPath, "--ref", refPath, "--tok-lc", "--metrics", "bleu")
	if code != 0 {
		t.Fatalf("eval --tok-lc exited %d: %s", code, stderr)
	}
	if got, want := printedScore(t, stdout, "BLEU|"), metrics.BLEU(hlc, rlc); math.Abs(got-want) > 0.005 {
		t.Fatalf("--tok-lc printed %v, BLEU of the lowercased regex tokens is %v", got, want)
	}
	if strings.Contains(stdout, "chrF") || !strings.Contains(stdout, "case:lc|eff:no|tok:regex|smooth:none") {
		t.Fatalf("--tok-lc --metrics bleu printed\n%s", stdout)
	}
}

// TestEvalTranslatesWithAModel trains a toy model, then translates and scores its test set in one go, and
// checks that scoring the written translations gives the same figure.
func TestEvalTranslatesWithAModel(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, ref, out := filepath.Join(dir, "test.src"), filepath.Join(dir, "test.tgt"), filepath.Join(dir, "hyp.txt")
	stdout, stderr, code := run(t, "", "eval", "--model", ckpt, "--src", src, "--ref", ref, "--perplexity", "--output", out, "--tok-lc")
	if code != 0 {
		t.Fatalf("eval --model exited %d: %s", code, stderr)
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	refText, _ := os.ReadFile(ref)
	if got, want := strings.Count(string(written), "\n"), strings.Count(string(refText), "\n"); got != want {
		t.Fatalf("--output has %d lines, the references %d", got, want)
	}
	ppl := regexp.MustCompile(`perplexity = ([0-9.]+) \(([0-9]+) reference tokens\)`).FindStringSubmatch(stdout)
	if ppl == nil {
		t.Fatalf("no perplexity line in\n%s", stdout)
	}
	if p, _ := strconv.ParseFloat(ppl[1], 64); !(p > 1) || math.IsInf(p, 0) {
		t.Fatalf("perplexity %v", p)
	}
	again, stderr, code := run(t, "", "eval", "--hyp", out, "--ref", ref, "--tok-lc")
	if code != 0 {
		t.Fatalf("eval --hyp exited %d: %s", code, stderr)
	}
	if a, b := printedScore(t, stdout, "BLEU|"), printedScore(t, again, "BLEU|"); a != b {
		t.Fatalf("BLEU while translating %v, of the written translations %v", a, b)
	}
}

func TestEvalBadInputNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	hyp, ref, bad := filepath.Join(dir, "hyp.txt"), filepath.Join(dir, "ref.txt"), filepath.Join(dir, "bad.txt")
	writeFile(t, hyp, "a b\nc d\n")
	writeFile(t, ref, "a b\nc d\ne f\n")
	writeFile(t, bad, "a b\nc \xff d\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"line counts differ", []string{"--hyp", hyp, "--ref", ref}, "hyp.txt has 2 lines but " + ref + " has 3"},
		{"invalid UTF-8", []string{"--hyp", bad, "--ref", hyp}, "bad.txt line 2: invalid UTF-8"},
		{"missing file", []string{"--hyp", filepath.Join(dir, "none.txt"), "--ref", ref}, "none.txt"},
		{"unknown metric", []string{"--hyp", hyp, "--ref", hyp, "--metrics", "ter"}, `unknown metric "ter"`},
		{"neither hyp nor model", []string{"--ref", ref}, "either --hyp or --model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, "", append([]string{"eval"}, tt.args...)...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.want)
			}
		})
	}
}

// printedScore is the number after " = " on the first line of out that starts with prefix.
func printedScore(t *testing.T, out, prefix string) float64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			_, after, _ := strings.Cut(line, " = ")
			v, err := strconv.ParseFloat(strings.Fields(after)[0], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no line starting %q in\n%s", prefix, out)
	return 0
}
