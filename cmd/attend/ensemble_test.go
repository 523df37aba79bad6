package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateWithAnEnsemble trains two tiny models on the same corpus, of different architectures and seeds,
// and translates through the binary with several --model flags:
//   - a model with itself translates exactly as the model alone (the mean of equal log-probabilities is
//     them): greedily and with a beam of 5, both with float32 products (the model alone would use bfloat16
//     ones where the CPU runs them fast, an ensemble never), n-best scores, the length and coverage penalties,
//     --max-len and --replace-unk, attention included;
//   - a+b and b+a write the same translations and n-best scores (the mean does not depend on the order; without
//     --beta, whose coverage penalty reads the attention) but not the same attention: each reports its first
//     model's;
//   - heatmap --model a --model b draws the words translate writes, and its JSON says whose attention it is;
//   - eval --model a --model b scores what translate --model a --model b writes;
//   - a model of another vocabulary, a shortlist, and eval --perplexity are refused, saying why.
func TestTranslateWithAnEnsemble(t *testing.T) {
	a, dir, _ := trainTiny(t)
	b, _, _ := trainTiny(t, "--set", "model.dec_hidden=12", "--set", "model.attention=dot", "--set", "model.input_feeding=true", "--set", "train.seed=2")
	input := filepath.Join(dir, "test.src")
	translate := func(models []string, args ...string) (out, attention string) {
		t.Helper()
		attn := filepath.Join(t.TempDir(), "attention.jsonl")
		cmd := []string{"translate", "--input", input, "--tokenized", "--attention", attn}
		for _, m := range models {
			cmd = append(cmd, "--model", m)
		}
		stdout, stderr, code := run(t, "", append(cmd, args...)...)
		if code != 0 {
			t.Fatalf("translate with %v %v exited %d: %s", models, args, code, stderr)
		}
		js, err := os.ReadFile(attn)
		if err != nil {
			t.Fatal(err)
		}
		return stdout, string(js)
	}
	lines, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--beam", "1", "--precision", "float32"},
		{"--beam", "5", "--precision", "float32", "--n-best", "5", "--alpha", "0.6", "--max-len", "7", "--max-len-ratio", "1.2", "--replace-unk"},
		{"--beam", "5", "--precision", "float32", "--n-best", "5", "--beta", "0.2"},
	} {
		alone, aloneAttn := translate([]string{a}, args...)
		twice, twiceAttn := translate([]string{a, a}, args...)
		if twice != alone || twiceAttn != aloneAttn {
			t.Fatalf("%v: a model with itself wrote\n%s%s\nthe model alone\n%s%s", args, twice, twiceAttn, alone, aloneAttn)
		}
		if args[len(args)-2] == "--beta" {
			continue // the coverage penalty is of the first model's attention: a+b and b+a score differently
		}
		ab, abAttn := translate([]string{a, b}, args...)
		ba, baAttn := translate([]string{b, a}, args...)
		if ab != ba {
			t.Fatalf("%v: a+b wrote\n%s\nb+a\n%s", args, ab, ba)
		}
		if abAttn == baAttn {
			t.Fatalf("%v: a+b and b+a report the same attention; each should report its first model's", args)
		}
		if got, want := strings.Count(ab, "\n"), strings.Count(string(lines), "\n"); args[1] == "1" && got != want {
			t.Fatalf("%v: %d output lines for %d input lines", args, got, want)
		}
	}

	// heatmap draws the ensemble's words with the first model's attention, and says so.
	greedy, _ := translate([]string{a, b}, "--beam", "1")
	first := strings.SplitN(string(lines), "\n", 2)[0]
	pic := filepath.Join(dir, "ensemble.json")
	stdout, stderr, code := run(t, "", "heatmap", "--model", a, "--model", b, "--beam", "1", "--text", first, "--out", pic)
	if code != 0 {
		t.Fatalf("heatmap exited %d: %s", code, stderr)
	}
	if want := pic + ": " + strings.SplitN(greedy, "\n", 2)[0] + "\n"; stdout != want {
		t.Fatalf("heatmap of the ensemble printed %q; want translate's words %q", stdout, want)
	}
	if js, err := os.ReadFile(pic); err != nil || !strings.Contains(string(js), "the first of an ensemble of 2 models, which chose the output words") {
		t.Fatalf("heatmap's JSON does not say the attention is the first of 2 models': %s (%v)", js, err)
	}

	// eval translates as translate does, and scores that.
	hyps, ref := filepath.Join(dir, "ensemble.hyp"), filepath.Join(dir, "test.tgt")
	if _, stderr, code := run(t, "", "translate", "--model", a, "--model", b, "--input", input, "--output", hyps); code != 0 {
		t.Fatalf("translate --output exited %d: %s", code, stderr)
	}
	fromTranslate, stderr, code := run(t, "", "eval", "--hyp", hyps, "--ref", ref, "--tok-lc", "--metrics", "bleu")
	if code != 0 {
		t.Fatalf("eval --hyp exited %d: %s", code, stderr)
	}
	fromEval, stderr, code := run(t, "", "eval", "--model", a, "--model", b, "--src", input, "--ref", ref, "--tok-lc", "--metrics", "bleu")
	if code != 0 {
		t.Fatalf("eval --model a --model b exited %d: %s", code, stderr)
	}
	if fromEval != fromTranslate {
		t.Fatalf("eval of the ensemble:\n%s\neval of translate's output:\n%s", fromEval, fromTranslate)
	}

	other, _, _ := trainTiny(t, "--set", "data.max_vocab=20")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"translate", "--model", a, "--model", other, "--input", input},
			[]string{a + " and " + other + " read or write different text", "different source vocabularies (", " tokens and 20 tokens, the same up to the shorter's end"}},
		{[]string{"translate", "--model", a, "--model", b, "--input", input, "--shortlist", "10,5"},
			[]string{"--shortlist with 2 models: a shortlist scores a few words of one model's output layer"}},
		{[]string{"eval", "--model", a, "--model", b, "--src", input, "--ref", ref, "--perplexity"},
			[]string{"--perplexity scores the references under one model"}},
	} {
		_, stderr, code := run(t, "", tc.args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, stderr %q; want 1", tc.args, code, stderr)
		}
		for _, want := range tc.want {
			if !strings.Contains(stderr, want) {
				t.Fatalf("%v: stderr %q lacks %q", tc.args, stderr, want)
			}
		}
	}
}
