package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// TestTrainThenTranslateEndToEnd trains a tiny model on a generated corpus through the binary, then translates
// a file and standard input with it, and checks outputs, metrics and exit codes.
func TestTrainThenTranslateEndToEnd(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(300, 30, 5, 7)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	stdout, stderr, code := run(t, "", "train", "--config", "../../configs/demo.yaml",
		"--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"),
		"--valid-src", filepath.Join(dir, "valid.src"), "--valid-tgt", filepath.Join(dir, "valid.tgt"),
		"--out", ckpt, "--max-steps", "12", "--set", "model.emb=8", "--set", "model.enc_hidden=8",
		"--set", "model.dec_hidden=8", "--set", "model.attn_dim=8", "--set", "train.log_every=5", "--no-progress")
	if code != 0 {
		t.Fatalf("train exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "done: 12 steps") || !strings.Contains(last, "tok/s") || !strings.Contains(last, "valid ppl") {
		t.Fatalf("last stdout line %q does not summarise the run", last)
	}
	for _, f := range []string{ckpt, filepath.Join(dir, "m.best.ckpt"), filepath.Join(dir, "m.metrics.jsonl")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("training did not write %s: %v", f, err)
		}
	}
	metrics, _ := os.ReadFile(filepath.Join(dir, "m.metrics.jsonl"))
	for _, key := range []string{`"step":`, `"epoch":`, `"loss":`, `"tgt_tokens":`, `"tok_per_s":`, `"elapsed_s":`, `"valid_loss":`, `"valid_ppl":`} {
		if !bytes.Contains(metrics, []byte(key)) {
			t.Fatalf("metrics file lacks %s:\n%s", key, metrics)
		}
	}

	input := filepath.Join(dir, "in.txt")
	writeFile(t, input, test[0].Src+"\n\n"+test[1].Src+"\n")
	out := filepath.Join(dir, "out.txt")
	attn := filepath.Join(dir, "attn.jsonl")
	if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--output", out, "--attention", attn); code != 0 {
		t.Fatalf("translate exited %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(out)
	if n := strings.Count(string(got), "\n"); n != 3 {
		t.Fatalf("translate wrote %d lines for 3 input lines:\n%s", n, got)
	}
	if a, _ := os.ReadFile(attn); strings.Count(string(a), `"attention"`) != 3 {
		t.Fatalf("attention file does not have one record per line:\n%s", a)
	}
	stdout, stderr, code = run(t, test[0].Src+"\n", "translate", "--model", ckpt)
	if code != 0 || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("translate from stdin: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}

	// A shortlist that lists every word changes nothing; a small one still translates every line, greedy and
	// under beam search.
	for _, beam := range []string{"1", "3"} {
		full, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--beam", beam)
		if code != 0 {
			t.Fatalf("translate --beam %s exited %d: %s", beam, code, stderr)
		}
		every, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--beam", beam, "--shortlist", "1000,50")
		if code != 0 || every != full {
			t.Fatalf("translate --beam %s --shortlist 1000,50: exit %d, output %q; without the shortlist %q (%s)", beam, code, every, full, stderr)
		}
		small, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--beam", beam, "--shortlist", "2,1")
		if code != 0 || strings.Count(small, "\n") != 3 {
			t.Fatalf("translate --beam %s --shortlist 2,1: exit %d, output %q (%s)", beam, code, small, stderr)
		}
	}
	if _, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--shortlist", "20"); code != 1 || !strings.Contains(stderr, `--shortlist is "20"; want F,K`) {
		t.Fatalf("translate --shortlist 20: exit %d, stderr %s", code, stderr)
	}
	// attend lexicon learns from the training corpus the same table as training did: the checkpoint it writes
	// is the trained one, byte for byte.
	again := filepath.Join(dir, "again.ckpt")
	if stdout, stderr, code := run(t, "", "lexicon", "--model", ckpt, "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--out", again); code != 0 || !strings.Contains(stdout, "written to "+again) {
		t.Fatalf("lexicon exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if a, b := readBytes(t, ckpt), readBytes(t, again); !bytes.Equal(a, b) {
		t.Fatalf("attend lexicon wrote %d bytes that differ from the %d of the trained checkpoint", len(b), len(a))
	}
	// The corpus the wrong way round is refused, and nothing is written.
	reversed := filepath.Join(dir, "reversed.ckpt")
	if _, stderr, code := run(t, "", "lexicon", "-m", ckpt, "--src", filepath.Join(dir, "train.tgt"),
		"--tgt", filepath.Join(dir, "train.src"), "--out", reversed); code != 1 || !strings.Contains(stderr, "is the wrong way round for this model") ||
		!strings.Contains(stderr, "swap --src and --tgt") {
		t.Fatalf("lexicon of a reversed corpus: exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(reversed); err == nil {
		t.Fatal("lexicon of a reversed corpus wrote a checkpoint")
	}
}

// TestBadInputFailsWithFileAndLine checks that broken corpora and paths give a clear message and exit code 1.
func TestBadInputFailsWithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	src, tgt := filepath.Join(dir, "a.src"), filepath.Join(dir, "a.tgt")
	cases := []struct {
		name, src, tgt string
		args           []string
		want           []string
	}{
		{"mismatched line counts", "a b\nc d\ne f\n", "x y\nz w\n", nil, []string{"a.tgt", "line"}},
		{"invalid UTF-8", "a b\nc \xff d\n", "x y\nz w\n", nil, []string{"a.src line 2", "UTF-8"}},
		{"empty corpus", "", "", nil, []string{"a.src", "empty"}},
		{"missing file", "a\n", "b\n", []string{"--src", filepath.Join(dir, "nope.src")}, []string{"nope.src"}},
		{"unknown config key", "a\n", "b\n", []string{"--set", "model.size=3"}, []string{"size"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, src, c.src)
			writeFile(t, tgt, c.tgt)
			args := append([]string{"train", "--src", src, "--tgt", tgt, "--out", filepath.Join(dir, "m.ckpt"), "--no-progress"}, c.args...)
			_, stderr, code := run(t, "", args...)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Fatalf("stderr %q does not mention %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("stderr shows a panic: %s", stderr)
			}
		})
	}
	if _, stderr, code := run(t, "x\n", "translate", "--model", filepath.Join(dir, "missing.ckpt")); code != 1 || !strings.Contains(stderr, "missing.ckpt") {
		t.Fatalf("translate with a missing model: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := run(t, "", "train"); code != 1 {
		t.Fatalf("train without --out: exit %d, want 1", code)
	}
}

// TestInterruptSavesAndResumeFinishes sends SIGINT to a training run once it has logged step 3 (read from its
// output, so no timing is involved), expects exit status 130 and a checkpoint at the step the message names,
// then resumes it for five more steps. However late the signal lands, the test asks for steps beyond it.
func TestInterruptSavesAndResumeFinishes(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(2000, 20, 5, 9)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--out", ckpt, "--no-progress", "--set", "train.log_every=1",
		"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8"}
	cmd, stdout, stderr := startAttend(t, append(args, "--max-steps", "100000")...)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "step 3 ") {
	}
	if lines.Err() != nil || !strings.HasPrefix(lines.Text(), "step 3 ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run ended before logging step 3 (%v); stderr: %s", lines.Err(), stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	for lines.Scan() { // keep reading, so that the run never blocks on a full pipe
	}
	err := cmd.Wait()
	if exitCode(t, err) != 130 {
		t.Fatalf("interrupted run: %v, want exit status 130; stderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("interrupted run does not say how to resume: %s", stderr.String())
	}
	ck, err := model.Load(ckpt)
	if err != nil {
		t.Fatalf("the interrupted run's checkpoint: %v", err)
	}
	stopped := ck.Progress.Step
	if stopped < 3 || !strings.Contains(stderr.String(), fmt.Sprintf("training interrupted at step %d ", stopped)) {
		t.Fatalf("checkpoint at step %d; stderr: %s", stopped, stderr.String())
	}
	target := strconv.Itoa(stopped + 5)
	out, errOut, code := run(t, "", append(args, "--resume", ckpt, "--max-steps", target)...)
	if code != 0 || !strings.Contains(out, "resuming "+ckpt+" at epoch ") ||
		!strings.Contains(out, fmt.Sprintf(", step %d\n", stopped)) ||
		!strings.Contains(out, "done: "+target+" steps") {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// TestTrainWithoutConfigIsGuided trains the default preset (no --config) for a few steps at tiny widths: the
// statistical aligner links the corpus first (NAME.align, a line per pair), and the model has the alignment
// attention that heatmap --alignment draws and a model trained with --config demo.yaml has not; a Transformer
// (--set model.type=transformer) trains unguided.
func TestTrainWithoutConfigIsGuided(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(120, 10, 4, 5)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	stdout, stderr, code := run(t, "", "train", "--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"),
		"--out", ckpt, "--max-steps", "3", "--set", "data.merges=50", "--set", "model.emb=8", "--set", "model.enc_hidden=8",
		"--set", "model.dec_hidden=8", "--set", "model.attn_dim=8", "--no-progress")
	if code != 0 {
		t.Fatalf("train exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "guided alignment: the statistical aligner") {
		t.Fatalf("the default preset did not run the statistical aligner; stdout:\n%s", stdout)
	}
	links, err := os.ReadFile(filepath.Join(dir, "m.align"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(links), "\n"); n != len(train) {
		t.Fatalf("m.align has %d lines, want one per training pair (%d)", n, len(train))
	}
	first := strings.Fields(train[0].Src)
	pic := filepath.Join(dir, "a.png")
	if _, stderr, code := run(t, "", "heatmap", "--model", ckpt, "--alignment", "--text", strings.Join(first, " "), "--out", pic); code != 0 {
		t.Fatalf("heatmap --alignment of the default preset's model exited %d: %s", code, stderr)
	}
	decodePNG(t, pic)
	// --set model.type=transformer without a config file trains Default's Transformer, which the preset's
	// recurrent alignment attention does not fit: unguided, no links written.
	stdout, stderr, code = run(t, "", "train", "--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"),
		"--out", filepath.Join(dir, "tf.ckpt"), "--max-steps", "2", "--set", "data.merges=50", "--set", "model.type=transformer",
		"--set", "model.d_model=16", "--set", "model.heads=2", "--set", "model.ff=32", "--no-progress")
	if code != 0 || strings.Contains(stdout, "guided alignment") {
		t.Fatalf("train --set model.type=transformer without a config: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "tf.align")); err == nil {
		t.Fatal("the unguided Transformer wrote tf.align")
	}
	demo := trainDirection(t, dir, "demo", "train.src", "train.tgt")
	if _, stderr, code := run(t, "", "heatmap", "--model", demo, "--alignment", "--text", strings.Join(first, " "), "--out", pic); code == 0 || !strings.Contains(stderr, "no alignment attention") {
		t.Fatalf("heatmap --alignment of a model trained with demo.yaml: exit %d, stderr %q; want the error that it has no alignment attention", code, stderr)
	}
}
