package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/attend-nmt/attend/data"
)

// LearnBPEFiles reads and tokenizes the text files at paths (.gz is read directly) on every core and learns up
// to merges BPE merges from all of them together (data.WordCounts, data.LearnBPECounts). A cancelled ctx stops
// it at once, while reading or while learning, with an error that matches ErrStopped: the caller has written
// nothing yet.
func LearnBPEFiles(ctx context.Context, paths []string, tok data.Tokenizer, merges int) (*data.BPE, error) {
	var words []string
	var counts []int64
	err := interruptible(ctx, "reading "+strings.Join(paths, ", "), func() error {
		var err error
		words, counts, err = data.WordCounts(ctx, paths, tok, runtime.GOMAXPROCS(0), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	var b *data.BPE
	err = interruptible(ctx, "learning merges", func() error {
		b = data.LearnBPECounts(words, counts, merges)
		return nil
	})
	return b, err
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
	lines := readLines(req.Input, req.InputName)
	out := bufio.NewWriter(req.Output)
	seen := map[string][]string{} // each distinct word is segmented once
	written := 0
	for {
		var l inputLine
		var more bool
		select {
		case <-ctx.Done():
			out.Flush()
			return written, ctx.Err()
		case l, more = <-lines:
		}
		if !more {
			return written, flushed(out)
		}
		if l.err != nil {
			return written, firstErr(flushed(out), l.err)
		}
		var words []string
		if req.BPE == nil {
			words = data.UndoBPE(strings.Fields(l.text))
		} else {
			for _, w := range req.Tokenizer.Tokenize(l.text) {
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
		if len(lines) == 0 {
			if err := flushed(out); err != nil {
				return written, err
			}
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

// firstErr returns the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
