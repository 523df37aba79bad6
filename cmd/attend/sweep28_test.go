package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/model"
)

// TestTranslateRefusesImpossibleSearchSettings gives translate settings that used to be accepted and give
// nonsense (an infinite or NaN penalty: scores of -Inf, NaN or 0), be ignored (--threshold without
// --alignments) or exceed what the model has (K of --shortlist above the lexicon's 50): each must fail, naming
// the flag and what it takes.
func TestTranslateRefusesImpossibleSearchSettings(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	input := filepath.Join(dir, "test.src")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--alpha", "Inf"}, "--alpha is +Inf; want at least 0 and at most 10"},
		{[]string{"--alpha", "1e308", "--n-best", "3"}, "--alpha is 1e+308; want at least 0 and at most 10 (0: no length penalty)"},
		{[]string{"--beta", "1e308"}, "--beta is 1e+308; want at least 0 and at most 10 (0: no coverage penalty)"},
		{[]string{"--max-len-ratio", "1e19"}, "--max-len-ratio is 1e+19; want at least 0 and at most 1000 (0: no such limit)"},
		{[]string{"--max-len-ratio", "NaN"}, "--max-len-ratio is NaN"},
		{[]string{"--alpha", "NaN"}, "--alpha is NaN"},
		{[]string{"--beta", "Inf"}, "--beta is +Inf; want at least 0 and at most 10"},
		{[]string{"--beta", "-Inf"}, "--beta is -Inf"},
		{[]string{"--beta", "NaN", "--beam", "1"}, "--beta is NaN"},
		{[]string{"--beta", "-0.5"}, "--beta is -0.5"},
		{[]string{"--shortlist", "100,500"}, "K is 500, but the lexicon keeps at most 50"},
		{[]string{"--threshold", "0.3"}, "--threshold 0.3 chooses the links of --alignments, which is not given"},
		{[]string{"--threshold", "NaN", "--alignments", filepath.Join(dir, "a.txt")}, "--threshold is NaN"},
	} {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			stdout, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input}, c.args...)...)
			if code != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing written and %q", code, stdout, stderr, c.want)
			}
		})
	}
	if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--shortlist", "100,50"); code != 0 {
		t.Fatalf("--shortlist 100,50 (K at its limit): exit %d, %s", code, stderr)
	}
}

// TestTranslateCutsAHugeBeamToTheVocabulary asks for a beam of ten million (15 GB allocated at once before) and
// one just past the vocabulary, within 4 GB of memory: both are cut to the vocabulary with a note and translate
// as that beam does.
func TestTranslateCutsAHugeBeamToTheVocabulary(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	ck, err := model.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	v := ck.Model.TgtVocab.Size()
	input := filepath.Join(dir, "test.src")
	want, stderr, code, _ := runLimited(t, time.Minute, "translate", "--model", ckpt, "--input", input, "--beam", strconv.Itoa(v))
	if code != 0 {
		t.Fatalf("--beam %d (the vocabulary): exit %d, %s", v, code, stderr)
	}
	for _, beam := range []int{v + 1, 10_000_000} {
		got, stderr, code, took := runLimited(t, time.Minute, "translate", "--model", ckpt, "--input", input, "--beam", strconv.Itoa(beam), "--n-best", "3")
		note := "note: --beam " + strconv.Itoa(beam) + " is more than the model's " + strconv.Itoa(v) + " target words; using --beam " + strconv.Itoa(v)
		if code != 0 || !strings.Contains(stderr, note) {
			t.Fatalf("--beam %d: exit %d after %v, stderr %q; want 0 and %q", beam, code, took, stderr, note)
		}
		var firsts []string
		for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
			fields := strings.Split(line, " ||| ")
			if len(fields) != 4 {
				t.Fatalf("--beam %d: n-best line %q", beam, line)
			}
			if n, _ := strconv.Atoi(fields[0]); n == len(firsts) {
				firsts = append(firsts, fields[1])
			}
		}
		if strings.Join(firsts, "\n")+"\n" != want {
			t.Fatalf("--beam %d translates\n%s\n--beam %d translates\n%s", beam, strings.Join(firsts, "\n"), v, want)
		}
	}
}

// TestEvalBoundsResamplesAndTrials: a billion resamples ran out of memory; each bound is an error that says it.
func TestEvalBoundsResamplesAndTrials(t *testing.T) {
	dir := t.TempDir()
	hyp := filepath.Join(dir, "hyp.txt")
	writeFile(t, hyp, "a b c\nd e f\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a billion resamples", []string{"--confidence", "--resamples", "1000000000"}, "--resamples is 1000000000; want 1 to 100000"},
		{"one resample too many", []string{"--confidence", "--resamples", "100001"}, "--resamples is 100001; want 1 to 100000"},
		{"a billion trials", []string{"--hyp", hyp, "--paired-ar", "--trials", "1000000000"}, "--trials is 1000000000; want 1 to 1000000"},
		{"negative trials", []string{"--trials", "-3"}, "--trials is -3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code, took := runLimited(t, time.Minute, append([]string{"eval", "--hyp", hyp, "--ref", hyp}, c.args...)...)
			if code != 1 || !strings.Contains(stderr, c.want) || took > 10*time.Second {
				t.Fatalf("exit %d after %v, stderr %q; want 1 at once and %q", code, took, stderr, c.want)
			}
		})
	}
	stdout, stderr, code, _ := runLimited(t, time.Minute, "eval", "--hyp", hyp, "--ref", hyp, "--confidence", "--resamples", "100000")
	if code != 0 || !strings.Contains(stdout, "bs:100000") {
		t.Fatalf("--resamples 100000 (the limit): exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestOverlongPairsAreSkippedWithAWarning gives align, eval --perplexity and heatmap --ref a pair of
// 20,000-word lines among short ones (they ran for minutes and died of memory): each must finish within a
// minute in 4 GB, name the file and line in a warning, skip that pair and treat the others as before.
func TestOverlongPairsAreSkippedWithAWarning(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "test.src"), filepath.Join(dir, "test.tgt")
	short := func(path string) []string {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(raw)), "\n")[:3]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	long := func(lines []string) string {
		words := strings.Fields(strings.Join(lines, " "))
		out := make([]string, 20000)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ")
	}
	srcLines, tgtLines := short(src), short(tgt)
	longSrc, longTgt := filepath.Join(dir, "long.src"), filepath.Join(dir, "long.tgt")
	writeFile(t, longSrc, strings.Join(srcLines, "\n")+"\n"+long(srcLines)+"\n"+srcLines[0]+"\n")
	writeFile(t, longTgt, strings.Join(tgtLines, "\n")+"\n"+long(tgtLines)+"\n"+tgtLines[0]+"\n")
	warning := longSrc + " and " + longTgt + " line 4: 20000 and 20000 tokens, more than the length limit"
	for _, c := range []struct {
		name string
		args []string
		also string
	}{
		{"align", []string{"align", "--model", ckpt, "--src", longSrc, "--tgt", longTgt}, "alignment line is empty"},
		{"eval --perplexity", []string{"eval", "--model", ckpt, "--src", longSrc, "--ref", longTgt, "--perplexity"}, "left out of the perplexity"},
		{"heatmap --ref", []string{"heatmap", "--model", ckpt, "--input", longSrc, "--ref", longTgt, "--out-dir", filepath.Join(dir, "gallery")}, "not drawn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code, took := runLimited(t, time.Minute, c.args...)
			if code != 0 || !strings.Contains(stderr, warning) || !strings.Contains(stderr, c.also) {
				t.Fatalf("exit %d after %v, stderr %q; want 0 and a warning %q … %q", code, took, stderr, warning, c.also)
			}
			switch c.name {
			case "align":
				lines := strings.Split(stdout, "\n")
				if len(lines) != 6 || lines[3] != "" || lines[0] == "" || lines[4] != lines[0] {
					t.Fatalf("alignments %q: want 5 lines, the 4th empty, the 5th as the 1st", stdout)
				}
			case "eval --perplexity":
				if !strings.Contains(stdout, "perplexity = ") {
					t.Fatalf("no perplexity in %q", stdout)
				}
			case "heatmap --ref":
				if !strings.Contains(stdout, "4 sentences drawn") {
					t.Fatalf("stdout %q: want 4 sentences drawn", stdout)
				}
			}
		})
	}
	// heatmap --text draws one sentence: one too long is an error saying the limit, not a skipped nothing.
	longText := long(srcLines)
	if _, stderr, code, _ := runLimited(t, time.Minute, "heatmap", "--model", ckpt, "--text", longText, "--out", filepath.Join(dir, "one.png")); code != 1 ||
		!strings.Contains(stderr, "more than the length limit") {
		t.Fatalf("heatmap --text of 20,000 words: exit %d, %s", code, stderr)
	}
	// --max-len raises the limit: the long pair is named again, now with the new limit, from align.
	if _, stderr, code, _ := runLimited(t, time.Minute, "align", "--model", ckpt, "--src", longSrc, "--tgt", longTgt, "--max-len", "100"); code != 0 ||
		!strings.Contains(stderr, "more than the length limit 100 (--max-len)") {
		t.Fatalf("align --max-len 100: exit %d, %s", code, stderr)
	}
}

// TestAlignNamesGoldLinksOutsideTheirSentence: a gold link past its sentence pair (999-999) counted as a sure
// link; a 0 in a one-based file was "not a link". Both must say what they are, with the file and line.
func TestAlignNamesGoldLinksOutsideTheirSentence(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "test.src"), filepath.Join(dir, "test.tgt")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(raw), "\n")
	gold := func(name string, line2 string) string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = "1-1"
		}
		lines[1] = line2
		path := filepath.Join(dir, name)
		writeFile(t, path, strings.Join(lines, "\n")+"\n")
		return path
	}
	far, zero := gold("far.align", "1-1 999-999"), gold("zero.align", "0-0")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"999-999", []string{"--gold", far}, []string{far + " line 2", "999-999", "source and", "target words"}},
		{"999-999 one-based", []string{"--gold", far, "--one-based"}, []string{far + " line 2", "999-999, but the pair has"}},
		{"0-0 one-based", []string{"--gold", zero, "--one-based"}, []string{zero + " line 2", `"0-0": position 0 in a one-based file`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, "", append([]string{"align", "--model", ckpt, "--src", src, "--tgt", tgt}, c.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, stderr %q; want 1", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "not a link") {
				t.Errorf("stderr %q calls a link out of range not a link", stderr)
			}
		})
	}
}

// TestTrainRefusesBeforeAllocating gives train settings that each used to run out of memory or train on nothing:
// every width at the top of its range, data.round_len far above data.max_len, a data.min_freq that leaves no
// word, and a config file with a key given twice. Each must fail at once, in 4 GB, with a message naming the
// setting, and write no checkpoint.
func TestTrainRefusesBeforeAllocating(t *testing.T) {
	_, dir, args := trainTiny(t)
	dup := filepath.Join(dir, "dup.yaml")
	writeFile(t, dup, "model:\n  emb: 8\n  cell: lstm\n  emb: 16\n")
	for _, c := range []struct {
		name  string
		extra []string
		want  []string
	}{
		{"every width 65536", []string{"--set", "model.emb=65536", "--set", "model.enc_hidden=65536", "--set", "model.dec_hidden=65536"},
			[]string{"training this model needs about", "TB", "this machine has", "--force-memory"}},
		{"round_len 16384", []string{"--set", "data.round_len=16384"}, []string{"data.round_len is 16384, above data.max_len"}},
		{"min_freq 100000", []string{"--set", "data.min_freq=100000"}, []string{"data.min_freq 100000 leaves the source vocabulary without a word"}},
		{"a key given twice", []string{"--config", dup}, []string{dup, "line 4: key model.emb is given twice, at lines 2 and 4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.ckpt")
			a := append(append([]string(nil), args...), c.extra...)
			a = append(a, "--out", out, "--max-steps", "2", "--no-progress")
			_, stderr, code, took := runLimited(t, time.Minute, a...)
			if code != 1 || took > 30*time.Second {
				t.Fatalf("exit %d after %v, stderr %q; want 1 at once", code, took, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}
