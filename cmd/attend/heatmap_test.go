package main

import (
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/synth"
)

// trainDirection trains a tiny model for a few steps through the binary, from src to tgt files in dir, and returns
// its checkpoint.
func trainDirection(t *testing.T, dir, name, src, tgt string) string {
	t.Helper()
	ckpt := filepath.Join(dir, name+".ckpt")
	stdout, stderr, code := run(t, "", "train", "--config", "../../configs/demo.yaml",
		"--src", filepath.Join(dir, src), "--tgt", filepath.Join(dir, tgt), "--out", ckpt, "--max-steps", "6",
		"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8",
		"--set", "train.log_every=2", "--no-progress")
	if code != 0 {
		t.Fatalf("train exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return ckpt
}

func decodePNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("%s is only %v", path, b.Size())
	}
}

// TestHeatmapAlignPlotEndToEnd trains tiny models through the binary and runs every attention command on them:
// heat maps in each format, forced references, a gallery, alignments scored against the corpus's gold,
// symmetrized with a reverse model, translate --alignments and the training curves.
func TestHeatmapAlignPlotEndToEnd(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(200, 10, 6, 3)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := trainDirection(t, dir, "m", "train.src", "train.tgt")
	ok := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(t, "", args...)
		if code != 0 {
			t.Fatalf("attend %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}

	// One sentence, each format.
	for _, ext := range []string{"png", "svg", "json", "csv"} {
		out := filepath.Join(dir, "one."+ext)
		ok("heatmap", "--model", ckpt, "--text", test[0].Src, "--out", out)
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		switch ext {
		case "png":
			decodePNG(t, out)
		case "svg":
			if !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), strings.Fields(test[0].Src)[0]) {
				t.Errorf("SVG lacks the svg element or the source words")
			}
		case "json":
			var m struct {
				Source, Output []string
				Attention      [][]float64
				Model          struct{ Checkpoint string }
			}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if strings.Join(m.Source, " ") != test[0].Src || len(m.Attention) != len(m.Output) || m.Output[len(m.Output)-1] != "</s>" && len(m.Output) < 30 || m.Model.Checkpoint != ckpt {
				t.Errorf("JSON export: %+v", m)
			}
		case "csv":
			records, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
			if err != nil || strings.Join(records[0][1:], " ") != test[0].Src {
				t.Errorf("CSV export: %v %v", records, err)
			}
		}
	}
	// A word the font cannot draw: a placeholder in the picture, and a note on standard error.
	cjk := filepath.Join(dir, "cjk.png")
	if _, stderr, code := run(t, "", "heatmap", "--model", ckpt, "--text", test[0].Src+" 東京", "--out", cjk); code != 0 ||
		!strings.Contains(stderr, "note: "+cjk+": 1 word has characters the font has no glyph for, drawn as □") {
		t.Errorf("heatmap of a CJK word: exit %d, stderr:\n%s", code, stderr)
	}
	// A forced reference: its words are the rows.
	forced := filepath.Join(dir, "forced.json")
	ok("heatmap", "--model", ckpt, "--text", test[1].Src, "--ref", test[1].Tgt, "--out", forced)
	var fm struct {
		Output   []string
		Forced   bool
		LogProbs []float64 `json:"log_probs"`
	}
	data, _ := os.ReadFile(forced)
	if err := json.Unmarshal(data, &fm); err != nil {
		t.Fatal(err)
	}
	if want := test[1].Tgt + " </s>"; strings.Join(fm.Output, " ") != want || !fm.Forced || len(fm.LogProbs) != len(fm.Output) {
		t.Errorf("forced map: output %q (want %q), forced %v, %d log-probs", strings.Join(fm.Output, " "), want, fm.Forced, len(fm.LogProbs))
	}

	// A gallery of the first 4 test sentences with their references.
	maps := filepath.Join(dir, "maps")
	ok("heatmap", "--model", ckpt, "--input", filepath.Join(dir, "test.src"), "--ref", filepath.Join(dir, "test.tgt"), "--out-dir", maps, "--limit", "4")
	page, err := os.ReadFile(filepath.Join(maps, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	images := 0
	for _, link := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(page), -1) {
		if _, err := os.Stat(filepath.Join(maps, link[1])); err != nil {
			t.Errorf("gallery link %q does not resolve", link[1])
		}
		if strings.HasSuffix(link[1], ".png") {
			decodePNG(t, filepath.Join(maps, link[1]))
			images++
		}
	}
	if images != 2*4 {
		t.Errorf("gallery links %d pictures, want 4 (each twice)", images/2)
	}

	// Alignments against the generator's gold, forward and symmetrized.
	alignOut := filepath.Join(dir, "test.out.align")
	stdout := ok("align", "--model", ckpt, "--src", filepath.Join(dir, "test.src"), "--tgt", filepath.Join(dir, "test.tgt"),
		"--output", alignOut, "--gold", filepath.Join(dir, "test.align"))
	if !regexp.MustCompile(`precision \d\.\d{4}  recall \d\.\d{4}  AER \d\.\d{4}`).MatchString(stdout) {
		t.Errorf("align printed %q, want precision, recall and AER", stdout)
	}
	written, _ := os.ReadFile(alignOut)
	if lines := strings.Split(strings.TrimSuffix(string(written), "\n"), "\n"); len(lines) != len(test) {
		t.Errorf("%d alignment lines for %d pairs", len(lines), len(test))
	}
	// The written alignment, given as gold, scores perfectly: Pharaoh round-trips through the reader
	// (--no-progress quietens alignment by a model too).
	if stdout := ok("align", "--model", ckpt, "--src", filepath.Join(dir, "test.src"), "--tgt", filepath.Join(dir, "test.tgt"),
		"--output", filepath.Join(dir, "again.align"), "--gold", alignOut, "--no-progress"); !strings.Contains(stdout, "AER 0.0000") {
		t.Errorf("own alignment as gold: %q", stdout)
	}
	reverse := trainDirection(t, dir, "rev", "train.tgt", "train.src")
	stdout = ok("align", "--model", ckpt, "--reverse", reverse, "--sym", "intersection", "--src", filepath.Join(dir, "test.src"),
		"--tgt", filepath.Join(dir, "test.tgt"), "--gold", filepath.Join(dir, "test.align"))
	if !strings.Contains(stdout, "-") || strings.Count(stdout, "\n") != len(test) {
		t.Errorf("symmetrized alignment on stdout: %q", stdout)
	}

	// --tokenized: the given white-space tokens are the words, "Mr." one of them, in heat maps and alignments.
	text := "Mr. " + test[0].Src + " ."
	tokJSON := filepath.Join(dir, "tokenized.json")
	ok("heatmap", "--model", ckpt, "--tokenized", "--text", text, "--ref", "Mr. "+test[0].Tgt, "--out", tokJSON)
	var tm struct {
		Source, Output []string
		Attention      [][]float64
	}
	data, _ = os.ReadFile(tokJSON)
	if err := json.Unmarshal(data, &tm); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tm.Source, " ") != text || tm.Output[0] != "Mr." || len(tm.Attention[0]) != len(strings.Fields(text)) {
		t.Errorf("tokenized heat map: source %q, output %q, %d columns", tm.Source, tm.Output, len(tm.Attention[0]))
	}
	mrSrc, mrTgt := filepath.Join(dir, "mr.src"), filepath.Join(dir, "mr.tgt")
	writeFile(t, mrSrc, text+"\n")
	writeFile(t, mrTgt, "Mr. "+test[0].Tgt+"\n")
	for _, tokenized := range []bool{false, true} {
		args := []string{"align", "--model", ckpt, "--src", mrSrc, "--tgt", mrTgt, "--reverse", ckpt, "--sym", "union"}
		words := len(strings.Fields(text)) + 1 // attend's tokenizer splits "Mr."
		if tokenized {
			args, words = append(args, "--tokenized"), words-1
		}
		links, err := align.ParsePharaoh(ok(args...), false)
		if err != nil {
			t.Fatal(err)
		}
		last := 0
		for _, l := range links {
			last = max(last, l.Src)
		}
		if last != words-1 { // union: every source word has a link of the reverse direction
			t.Errorf("tokenized %v: last linked source word %d, want %d", tokenized, last, words-1)
		}
	}

	// translate --alignments: one line per input line, links within the sentence.
	tAlign := filepath.Join(dir, "t.align")
	ok("translate", "--model", ckpt, "--input", filepath.Join(dir, "test.src"), "--output", filepath.Join(dir, "t.out"), "--alignments", tAlign)
	if data, _ := os.ReadFile(tAlign); strings.Count(string(data), "\n") != len(test) {
		t.Errorf("translate --alignments wrote %q", data)
	}

	// Training curves.
	curvesOut := filepath.Join(dir, "curves.png")
	ok("plot", "--metrics", filepath.Join(dir, "m.metrics.jsonl"), "--out", curvesOut)
	decodePNG(t, curvesOut)
}

// TestAttentionCommandsNameFileAndLine gives the new commands bad input and expects exit status 1 with a message
// naming the file (and line), never a panic.
func TestAttentionCommandsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(100, 5, 3, 4)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := trainDirection(t, dir, "m", "train.src", "train.tgt")
	badGold := filepath.Join(dir, "bad.align")
	writeFile(t, badGold, "0-0\n0-x 1-1\n0-0\n")
	longGold := filepath.Join(dir, "long.align")
	writeFile(t, longGold, "0-0\n0-0\n0-0\n0-0\n")
	shortRef := filepath.Join(dir, "short.tgt")
	writeFile(t, shortRef, "a\n")
	badMetrics := filepath.Join(dir, "bad.jsonl")
	writeFile(t, badMetrics, `{"event":"step","step":1,"loss":2,"tok_per_s":3}`+"\n{oops\n")
	src, tgt := filepath.Join(dir, "test.src"), filepath.Join(dir, "test.tgt")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad gold link", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--gold", badGold}, []string{"bad.align line 2", "0-x"}},
		{"missing gold file", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--gold", shortRef + "x"}, []string{"short.tgtx"}},
		{"gold longer than the corpus", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--gold", longGold}, []string{"4 lines", "test.src", "3"}},
		{"unknown symmetrization", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--reverse", ckpt, "--sym", "diag"}, []string{"diag", "grow-diag-final"}},
		{"sym without reverse", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--sym", "union"}, []string{"--reverse"}},
		{"reference file of another length", []string{"heatmap", "--model", ckpt, "--input", src, "--ref", shortRef, "--out-dir", filepath.Join(dir, "g")}, []string{"short.tgt", "1 line but", "3"}},
		{"unknown picture format", []string{"heatmap", "--model", ckpt, "--text", "a b", "--out", filepath.Join(dir, "a.gif")}, []string{"a.gif", ".png"}},
		{"text and input", []string{"heatmap", "--model", ckpt, "--text", "a", "--input", src, "--out", filepath.Join(dir, "a.png")}, []string{"either"}},
		{"bad metrics line", []string{"plot", "--metrics", badMetrics, "--out", filepath.Join(dir, "c.png")}, []string{"bad.jsonl line 2"}},
		{"missing model", []string{"heatmap", "--model", filepath.Join(dir, "nope.ckpt"), "--text", "a", "--out", filepath.Join(dir, "a.png")}, []string{"nope.ckpt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := run(t, "", c.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("panic: %s", stderr)
			}
		})
	}
}
