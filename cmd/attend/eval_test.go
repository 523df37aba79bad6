package main

import (
	"fmt"
	"math"
	"math/rand/v2"
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
		{"a paired test of one system", []string{"--hyp", hyp, "--ref", hyp, "--paired-bs"}, "--paired-bs needs two --hyp files"},
		{"no resamples", []string{"--hyp", hyp, "--ref", hyp, "--confidence", "--resamples", "0"}, "--resamples is 0"},
		{"two paired tests", []string{"--hyp", hyp, "--hyp", hyp, "--ref", hyp, "--paired-bs", "--paired-ar"}, "not both"},
		{"randomization of one system", []string{"--hyp", hyp, "--ref", hyp, "--paired-ar"}, "--paired-ar needs two --hyp files"},
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

// TestEvalPairedBootstrap scores three systems through the binary: a weak one (the baseline), a strong one and
// the weak one again. The strong one must differ on every resample (p = 1/1001, all wins), the copy not at all
// (p = 1); the table's scores must be the metrics package's, and the same seed must print the same table.
func TestEvalPairedBootstrap(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	var refs, weak, strong []string
	for range 80 {
		var r, w, s []string
		for range 4 + rng.IntN(10) {
			word := fmt.Sprintf("w%d", rng.IntN(40))
			r = append(r, word)
			w, s = append(w, word), append(s, word)
			if rng.IntN(2) == 0 {
				w[len(w)-1] = "x"
			}
			if rng.IntN(10) == 0 {
				s[len(s)-1] = "x"
			}
		}
		refs, weak, strong = append(refs, strings.Join(r, " ")), append(weak, strings.Join(w, " ")), append(strong, strings.Join(s, " "))
	}
	ref, weakPath, strongPath, copyPath := filepath.Join(dir, "ref"), filepath.Join(dir, "weak"), filepath.Join(dir, "strong"), filepath.Join(dir, "copy")
	writeFile(t, ref, strings.Join(refs, "\n")+"\n")
	writeFile(t, weakPath, strings.Join(weak, "\n")+"\n")
	writeFile(t, copyPath, strings.Join(weak, "\n")+"\n")
	writeFile(t, strongPath, strings.Join(strong, "\n")+"\n")

	args := []string{"eval", "--ref", ref, "--hyp", weakPath, "--hyp", strongPath, "--hyp", copyPath, "--paired-bs", "--tok-lc", "--metrics", "bleu"}
	stdout, stderr, code := run(t, "", args...)
	if code != 0 {
		t.Fatalf("eval --paired-bs exited %d: %s", code, stderr)
	}
	tokenize := func(lines []string) [][]string {
		out := make([][]string, len(lines))
		for i, l := range lines {
			out[i] = strings.Fields(l)
		}
		return out
	}
	lines := strings.Split(stdout, "\n")
	row := func(path string) (row, test string) {
		for i, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && (f[0] == path || len(f) > 1 && f[0] == "baseline:" && f[1] == path) {
				return l, lines[i+1]
			}
		}
		t.Fatalf("no row for %s in\n%s", path, stdout)
		return "", ""
	}
	for _, sys := range []struct {
		path, wantTest string
		hyps           []string
	}{
		{"baseline: " + weakPath, "", weak},
		{strongPath, "(p = 0.0010*, wins 100.0%)", strong},
		{copyPath, "(p = 1.0000, wins 0.0%)", weak},
	} {
		r, test := row(strings.TrimPrefix(sys.path, "baseline: "))
		want := fmt.Sprintf("%.2f (μ = ", metrics.CorpusBLEU(tokenize(sys.hyps), tokenize(refs), metrics.SmoothNone).Score)
		if !strings.HasPrefix(r, sys.path) || !strings.Contains(r, want) {
			t.Fatalf("row %q: want it to start %q and hold %q\n%s", r, sys.path, want, stdout)
		}
		if sys.wantTest != "" && strings.TrimSpace(test) != sys.wantTest {
			t.Fatalf("test line under %s is %q, want %q\n%s", sys.path, test, sys.wantTest, stdout)
		}
	}
	if !strings.Contains(stdout, "BLEU|nrefs:1|bs:1000|seed:12345|case:lc") {
		t.Fatalf("no bootstrap signature in\n%s", stdout)
	}
	if again, _, _ := run(t, "", args...); again != stdout {
		t.Fatalf("the same seed printed\n%s\nthen\n%s", stdout, again)
	}
	if other, _, _ := run(t, "", append(args, "--seed", "7")...); other == stdout || !strings.Contains(other, "seed:7|") {
		t.Fatalf("--seed 7 printed the same as seed 12345:\n%s", other)
	}

	// The same systems by approximate randomization: p only, no wins; the trials are in the signature.
	stdout, stderr, code = run(t, "", append(args[:len(args)-4:len(args)-4], "--paired-ar", "--tok-lc", "--metrics", "bleu")...)
	if code != 0 {
		t.Fatalf("eval --paired-ar exited %d: %s", code, stderr)
	}
	lines = strings.Split(stdout, "\n")
	for path, want := range map[string]string{strongPath: "(p = 0.0001*)", copyPath: "(p = 1.0000)"} {
		if _, test := row(path); strings.TrimSpace(test) != want {
			t.Fatalf("--paired-ar: test line under %s is %q, want %q\n%s", path, test, want, stdout)
		}
	}
	if !strings.Contains(stdout, "BLEU|nrefs:1|ar:10000|bs:1000|seed:12345|case:lc") || !strings.Contains(stdout, "approximate randomization") {
		t.Fatalf("--paired-ar printed\n%s", stdout)
	}

	// One system with --confidence: the interval follows the score on its line, which still reads as the score.
	stdout, stderr, code = run(t, "", "eval", "--ref", ref, "--hyp", weakPath, "--confidence", "--resamples", "200")
	if code != 0 {
		t.Fatalf("eval --confidence exited %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`BLEU\|nrefs:1\|bs:200\|seed:12345\|\S+ = ([0-9.]+) \(μ = ([0-9.]+) ± ([0-9.]+)\) [0-9.]+/`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no BLEU line with an interval in\n%s", stdout)
	}
	score, _ := strconv.ParseFloat(m[1], 64)
	mean, _ := strconv.ParseFloat(m[2], 64)
	half, _ := strconv.ParseFloat(m[3], 64)
	if !(half > 0) || math.Abs(score-mean) > half || printedScore(t, stdout, "BLEU|") != score {
		t.Fatalf("BLEU %v with interval %v ± %v", score, mean, half)
	}
	if !regexp.MustCompile(`chrF2\|nrefs:1\|bs:200\|seed:12345\|\S+ = [0-9.]+ \(μ = [0-9.]+ ± [0-9.]+\)\n`).MatchString(stdout) {
		t.Fatalf("no chrF2 line with an interval in\n%s", stdout)
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
