package app

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
)

// LearnBPEFiles reads and tokenizes the text files at paths (.gz is read directly) on every core and learns up
// to merges BPE merges from all of them together (data.WordCounts, data.LearnBPEProgress), showing the two phases
// to phases (nil: nowhere). A cancelled ctx stops it at once, while reading or while learning, with an error
// that matches ErrStopped: the caller has written nothing yet.
func LearnBPEFiles(ctx context.Context, paths []string, tok data.Tokenizer, merges int, phases PhaseRecorder) (*data.BPE, error) {
	phases = orNoPhases(phases)
	var words []string
	var counts []int64
	reading := "reading " + strings.Join(paths, ", ")
	phase := phases.StartPhase(reading, filesSize(paths), "")
	err := interruptible(ctx, reading, func() error {
		var err error
		words, counts, err = data.WordCounts(ctx, paths, tok, runtime.GOMAXPROCS(0), phase.Set)
		return err
	})
	phase.End()
	if err != nil {
		return nil, err
	}
	var b *data.BPE
	phase = phases.StartPhase("learning merges", int64(merges), "merge")
	err = interruptible(ctx, "learning merges", func() error {
		b = data.LearnBPEProgress(words, counts, merges, func(n int) { phase.Set(int64(n)) })
		return nil
	})
	phase.Set(int64(merges)) // done, also when the words allowed fewer merges
	phase.End()
	return b, err
}

// filesSize is the bytes of the files at paths together, or 0 when one cannot be read (its reader then says why).
func filesSize(paths []string) int64 {
	var total int64
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return 0
		}
		total += info.Size()
	}
	return total
}

// SubwordRequest is everything `attend bpe apply` and `attend bpe undo` need.
type SubwordRequest struct {
	// BPE splits the words of each line into subwords; nil joins the subwords of each line back into words
	// (data.UndoBPE).
	BPE       *data.BPE
	Tokenizer data.Tokenizer // tokenizes each line before BPE splits it; unused when joining
	Input     io.Reader
	InputName string // for error messages
	Output    io.Writer
}

// ApplySubwords splits (or joins) each input line as it arrives and writes it, one output line per input line,
// flushing whenever no further line is waiting: a file streams through in large writes, and a line typed or
// piped in is answered at once. A cancelled ctx stops it at once with ctx's error; what was written stays. It
// returns the number of lines written.
func ApplySubwords(ctx context.Context, req SubwordRequest) (int, error) {
	Started(ctx) // what is written stays
	lines := readLines(req.Input, req.InputName)
	out := bufio.NewWriter(req.Output)
	seen := map[string][]string{} // each distinct word is segmented once
	written := 0
	for {
		window, inputErr, more := collectWindow(ctx, lines, cap(lines), 0) // the lines waiting
		for _, text := range window {
			var words []string
			if req.BPE == nil {
				words = data.UndoBPE(strings.Fields(text))
			} else {
				for _, w := range req.Tokenizer.Tokenize(text) {
					pieces, ok := seen[w]
					if !ok {
						pieces = req.BPE.Segment(w)
						seen[w] = pieces
					}
					words = append(words, pieces...)
				}
			}
			out.WriteString(strings.Join(words, " "))
			out.WriteByte('\n')
			written++
		}
		// An interruption is what a cancelled ctx reports, whether or not the flush failed.
		if err := cmp.Or(ctx.Err(), flushed(out), inputErr); err != nil || !more {
			return written, err
		}
	}
}

// flushed flushes w, naming what failed.
func flushed(w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// BPEOptions is everything `attend bpe learn|apply|undo` reads from its command line.
type BPEOptions struct {
	Streams
	Inputs   []string // learn: the text files (at least one); apply, undo: at most one (none: standard input)
	Output   string   // "": standard output
	Codes    string   // apply: the merges file
	Merges   int      // learn: how many merges
	KeepCase bool     // do not lowercase
}

// RunBPELearn learns o.Merges merges from the files o.Inputs and writes them to o.Output.
func RunBPELearn(ctx context.Context, o BPEOptions) (err error) {
	if o.Merges < 1 {
		return fmt.Errorf("--merges is %d; want at least 1", o.Merges)
	}
	if err := checkBPEOutput(o, "codes.bpe"); err != nil {
		return err
	}
	b, err := LearnBPEFiles(ctx, o.Inputs, data.NewRegexTokenizer(!o.KeepCase), o.Merges, o.Progress)
	if err != nil {
		return err
	}
	var fs files
	defer fs.close(&err)
	w, err := fs.orStdout(o.Output, o.Stdout)
	if err != nil {
		return err
	}
	Started(ctx) // a signal now waits for the merges to be written whole
	_, err = b.WriteTo(w)
	return err
}

// RunBPEApply splits the lines of o.Inputs (standard input when none) into the subwords of the merges in
// o.Codes and writes them to o.Output.
func RunBPEApply(ctx context.Context, o BPEOptions) error { return applyBPE(ctx, o, false) }

// RunBPEUndo joins the subwords of the lines of o.Inputs (standard input when none) back into words and writes
// them to o.Output.
func RunBPEUndo(ctx context.Context, o BPEOptions) error { return applyBPE(ctx, o, true) }

// applyBPE is RunBPEApply, or RunBPEUndo with undo.
func applyBPE(ctx context.Context, o BPEOptions, undo bool) (err error) {
	if len(o.Inputs) > 1 {
		return errors.New("give at most one --input")
	}
	if err := checkBPEOutput(o, "output.txt"); err != nil {
		return err
	}
	req := SubwordRequest{Tokenizer: data.NewRegexTokenizer(!o.KeepCase)}
	if !undo {
		f, err := data.Open(o.Codes)
		if err != nil {
			return err
		}
		req.BPE, err = data.ReadBPE(f, o.Codes)
		f.Close()
		if err != nil {
			return err
		}
	}
	input := ""
	if len(o.Inputs) == 1 {
		input = o.Inputs[0]
	}
	var fs files
	defer fs.close(&err)
	src, w, err := fs.filter(input, o.Output, o.Streams)
	if err != nil {
		return err
	}
	req.Input, req.InputName, req.Output = src.R, src.Name, w
	n, err := ApplySubwords(ctx, req)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("interrupted after %s", plural.Count(n, "line"))
	}
	return err
}

// checkBPEOutput checks o.Output against the input files (see CheckOutputs); example names a file that fits it.
func checkBPEOutput(o BPEOptions, example string) error {
	if o.Output == "" {
		return nil
	}
	inputs := namedPaths("--input", o.Inputs)
	if o.Codes != "" {
		inputs = append(inputs, NamedPath{Role: "--codes", Path: o.Codes})
	}
	return CheckOutputs([]NamedPath{{Role: "--output", Path: o.Output, Example: example}}, inputs)
}
