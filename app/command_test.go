package app

import (
	"bytes"
	"context"
	"github.com/attend-nmt/attend/kernels"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// TestSearchFlagsOptionsChecksGivenFlagsAndFillsTheCheckpointsDefaults runs SearchFlags.Options on a model of
// 5 target words (7 with the reserved ones): a flag given out of range is refused naming it, a flag not given
// takes the checkpoint's setting, and a beam wider than the vocabulary is cut to it with a note.
func TestSearchFlagsOptionsChecksGivenFlagsAndFillsTheCheckpointsDefaults(t *testing.T) {
	cfg := tinyTrainConfig()
	cfg.Decode.MaxLen, cfg.Decode.Batch, cfg.Decode.Alpha = 33, 17, 0.6
	ck := &model.Checkpoint{Config: cfg, Model: untrainedModel(t)}
	vocab := ck.Model.TgtVocab.Size()
	for _, c := range []struct {
		name    string
		flags   SearchFlags
		wantErr string
		check   func(t *testing.T, o DecodeOptions, notes string)
	}{
		{name: "max-len 0 given", flags: SearchFlags{Beam: 1, MaxLenGiven: true}, wantErr: "--max-len is 0; want at least 1"},
		{name: "batch 0 given", flags: SearchFlags{Beam: 1, BatchGiven: true}, wantErr: "--batch is 0; want at least 1"},
		{name: "beam 0", flags: SearchFlags{}, wantErr: "--beam is 0; want at least 1"},
		{name: "n-best above beam", flags: SearchFlags{Beam: 2, NBest: 3, NBestGiven: true}, wantErr: "--n-best is 3; want 1 to --beam (2)"},
		{name: "negative alpha given", flags: SearchFlags{Beam: 1, Alpha: -1, AlphaGiven: true}, wantErr: "--alpha is -1; want at least 0 and at most 10"},
		{name: "alpha past the range", flags: SearchFlags{Beam: 3, NBest: 3, Alpha: 1e308, AlphaGiven: true}, wantErr: "--alpha is 1e+308; want at least 0 and at most 10"},
		{name: "beta past the range", flags: SearchFlags{Beam: 3, Beta: 1e308, BetaGiven: true}, wantErr: "--beta is 1e+308; want at least 0 and at most 10"},
		{name: "length ratio past the range", flags: SearchFlags{Beam: 3, MaxLenRatio: 1e19}, wantErr: "--max-len-ratio is 1e+19; want at least 0 and at most 1000"},
		{name: "negative threads", flags: SearchFlags{Beam: 1, Threads: -1}, wantErr: "--threads is -1"},
		{name: "bad shortlist", flags: SearchFlags{Beam: 1, Shortlist: "100"}, wantErr: `--shortlist is "100"; want F,K`},
		{name: "shortlist beyond the lexicon", flags: SearchFlags{Beam: 1, Shortlist: "1,1000"}, wantErr: "the lexicon keeps at most"},
		{name: "shortlist without a lexicon", flags: SearchFlags{Beam: 1, Shortlist: "10,2"}, wantErr: "m.ckpt has no lexicon"},
		{name: "checkpoint's defaults", flags: SearchFlags{Beam: 1, Alpha: 2}, check: func(t *testing.T, o DecodeOptions, _ string) {
			if o.MaxLen != 33 || o.Batch != 17 || o.Alpha != 0.6 || o.Precision != kernels.PrecisionAuto {
				t.Errorf("max len %d, batch %d, alpha %g, precision %q; want the checkpoint's 33, 17, 0.6 and auto", o.MaxLen, o.Batch, o.Alpha, o.Precision)
			}
		}},
		{name: "flags given", flags: SearchFlags{Beam: 1, MaxLen: 4, Batch: 2, Alpha: 0, AlphaGiven: true}, check: func(t *testing.T, o DecodeOptions, _ string) {
			if o.MaxLen != 4 || o.Batch != 2 || o.Alpha != 0 {
				t.Errorf("max len %d, batch %d, alpha %g; want the flags' 4, 2 and 0", o.MaxLen, o.Batch, o.Alpha)
			}
		}},
		{name: "beam wider than the vocabulary", flags: SearchFlags{Beam: 100, NBest: 50}, check: func(t *testing.T, o DecodeOptions, notes string) {
			if o.Beam != vocab || o.NBest != vocab {
				t.Errorf("beam %d, n-best %d; want both cut to the %d target words", o.Beam, o.NBest, vocab)
			}
			if !strings.Contains(notes, "note: --beam 100 is more than") || !strings.Contains(notes, "note: --n-best 50 is more than") {
				t.Errorf("notes %q; want one for --beam and one for --n-best", notes)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var notes bytes.Buffer
			o, err := c.flags.Options(&notes, "m.ckpt", ck, nil)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, o, notes.String())
		})
	}
	if lexicon.DefaultOptions().Keep >= 1000 {
		t.Fatalf("the lexicon keeps %d translations: the shortlist case above no longer asks for more", lexicon.DefaultOptions().Keep)
	}
}

// TestRunBPEApplyThenUndoGivesBackTheTokens learns merges from a file, splits standard input with them into
// a buffer, and joins the subwords back: the round trip gives the tokenized, lowercased text.
func TestRunBPEApplyThenUndoGivesBackTheTokens(t *testing.T) {
	dir := t.TempDir()
	text := "The lower newest widest lowest.\nnewer wider, lower!\n"
	train, codes := filepath.Join(dir, "train.txt"), filepath.Join(dir, "codes.bpe")
	if err := os.WriteFile(train, []byte(strings.Repeat(text, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var stdout bytes.Buffer
	if err := RunBPELearn(ctx, BPEOptions{Streams: Streams{Stdout: &stdout}, Inputs: []string{train}, Output: codes, Merges: 6}); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Errorf("bpe learn with --output wrote %q to standard output", stdout.String())
	}
	var split bytes.Buffer
	if err := RunBPEApply(ctx, BPEOptions{Streams: Streams{Stdin: strings.NewReader(text), Stdout: &split}, Codes: codes}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(split.String(), "@@") {
		t.Errorf("bpe apply wrote %q: no word split into subwords", split.String())
	}
	var joined bytes.Buffer
	if err := RunBPEUndo(ctx, BPEOptions{Streams: Streams{Stdin: &split, Stdout: &joined}}); err != nil {
		t.Fatal(err)
	}
	if want := "the lower newest widest lowest .\nnewer wider , lower !\n"; joined.String() != want {
		t.Errorf("bpe undo wrote %q; want %q", joined.String(), want)
	}
	err := RunBPEApply(ctx, BPEOptions{Streams: Streams{Stdin: strings.NewReader(text), Stdout: &split}, Codes: codes, Inputs: []string{train, train}})
	if err == nil || err.Error() != "give at most one --input" {
		t.Errorf("two --input: error %v; want give at most one --input", err)
	}
}

// TestRunAlignRefusesTheFlagsOfTheOtherMode checks the flags of align before anything is read: an option of one
// way of aligning given to the other is refused, naming it.
func TestRunAlignRefusesTheFlagsOfTheOtherMode(t *testing.T) {
	corpus := Corpus{Src: "does-not-exist.de", Tgt: "does-not-exist.en"}
	for _, c := range []struct {
		name    string
		opts    AlignOptions
		wantErr string
	}{
		{"both modes", AlignOptions{Model: "m.ckpt", Statistical: true}, "give one of --model, --statistical and --train, not several"},
		{"train and a model", AlignOptions{Model: "m.ckpt", Train: "dir"}, "give one of --model, --statistical and --train, not several"},
		{"epochs without train", AlignOptions{Statistical: true, Batch: 1, Iterations: 1, Epochs: 2, Given: map[string]bool{"epochs": true}}, "--epochs is an option of --train"},
		{"no corpus", AlignOptions{Statistical: true, Batch: 1, Iterations: 1}, "give the sentence pairs"},
		{"iterations with a model", AlignOptions{Model: "m.ckpt", Batch: 1, Iterations: 5, Given: map[string]bool{"iterations": true}}, "--iterations is an option of --statistical"},
		{"reverse with statistical", AlignOptions{Statistical: true, Batch: 1, Iterations: 1, Given: map[string]bool{"reverse": true}}, "--reverse is an option of alignment by a model (--model), not of --statistical"},
		{"sym without reverse", AlignOptions{Model: "m.ckpt", Batch: 1, Iterations: 1, Sym: "union", Given: map[string]bool{"sym": true}}, "--sym needs --reverse"},
		{"one-based without gold", AlignOptions{Statistical: true, Batch: 1, Iterations: 1, Given: map[string]bool{"one-based": true}}, "--one-based describes the --gold file"},
		{"max-len 0", AlignOptions{Model: "m.ckpt", Batch: 1, Iterations: 1, Given: map[string]bool{"max-len": true}}, "--max-len is 0; want at least 1"},
		{"unknown sym", AlignOptions{Statistical: true, Batch: 1, Iterations: 1, Sym: "sideways"}, "--sym: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "no corpus" {
				c.opts.Corpus = corpus
			}
			err := RunAlign(context.Background(), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v; want one containing %q", err, c.wantErr)
			}
		})
	}
}
