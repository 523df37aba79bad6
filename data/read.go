package data

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ParseError is a problem with one line of an input file.
type ParseError struct {
	File string // base name of the file
	Line int    // 1-based line number
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("data: %s line %d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrInvalidUTF8 is the cause of a ParseError for a line that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// Pair is one sentence pair as tokens, with the 1-based line number it came from.
type Pair struct {
	Src, Tgt []string
	Line     int
}

// Open opens a file for reading; a name ending in .gz is decompressed on the fly.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{z, f}, nil
}

// lineReader yields the lines of a file one at a time, checked for UTF-8, without a line-length limit.
type lineReader struct {
	name string
	r    *bufio.Reader
	line int
	text string
	err  error
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{name: filepath.Base(name), r: bufio.NewReaderSize(r, 1<<16)}
}

// next advances to the next line; it returns false at the end of input or on an error (see err).
func (l *lineReader) next() bool {
	if l.err != nil {
		return false
	}
	s, err := l.r.ReadString('\n')
	if err == io.EOF && s == "" {
		return false
	}
	if err != nil && err != io.EOF {
		l.err = fmt.Errorf("data: read %s: %w", l.name, err)
		return false
	}
	l.line++
	s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	if l.line == 1 {
		s = strings.TrimPrefix(s, "\uFEFF")
	}
	if !utf8.ValidString(s) {
		l.err = &ParseError{File: l.name, Line: l.line, Err: ErrInvalidUTF8}
		return false
	}
	l.text = s
	return true
}

// ReadParallel reads two line-aligned files, source and target, tokenizing each line.
func ReadParallel(srcPath, tgtPath string, tok Tokenizer) ([]Pair, error) {
	sf, err := Open(srcPath)
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	tf, err := Open(tgtPath)
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	src, tgt := newLineReader(sf, srcPath), newLineReader(tf, tgtPath)
	var pairs []Pair
	for {
		okS, okT := src.next(), tgt.next()
		if src.err != nil {
			return nil, src.err
		}
		if tgt.err != nil {
			return nil, tgt.err
		}
		if okS != okT {
			short, long := src, tgt
			if okS {
				short, long = tgt, src
			}
			return nil, fmt.Errorf("data: %s ended at line %d but %s has more lines", short.name, short.line, long.name)
		}
		if !okS {
			break
		}
		pairs = append(pairs, Pair{Src: tok.Tokenize(src.text), Tgt: tok.Tokenize(tgt.text), Line: src.line})
	}
	return pairs, checkNotEmpty(pairs, src.name)
}

// ReadTSV reads one file of tab-separated lines: column 1 is the source, column 2 the target, further columns
// are ignored.
func ReadTSV(path string, tok Tokenizer) ([]Pair, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines := newLineReader(f, path)
	var pairs []Pair
	for lines.next() {
		if lines.text == "" {
			pairs = append(pairs, Pair{Line: lines.line})
			continue
		}
		cols := strings.SplitN(lines.text, "\t", 3)
		if len(cols) < 2 {
			return nil, &ParseError{File: lines.name, Line: lines.line, Err: errors.New("want source<TAB>target, found no tab")}
		}
		pairs = append(pairs, Pair{Src: tok.Tokenize(cols[0]), Tgt: tok.Tokenize(cols[1]), Line: lines.line})
	}
	if lines.err != nil {
		return nil, lines.err
	}
	return pairs, checkNotEmpty(pairs, lines.name)
}

func checkNotEmpty(pairs []Pair, name string) error {
	for _, p := range pairs {
		if len(p.Src) > 0 || len(p.Tgt) > 0 {
			return nil
		}
	}
	return fmt.Errorf("data: %s: corpus is empty", name)
}

// ReadLines reads sentences to translate from r, one per line, tokenized; name is used in error messages.
func ReadLines(r io.Reader, name string, tok Tokenizer) ([][]string, error) {
	lines := newLineReader(r, name)
	var out [][]string
	for lines.next() {
		out = append(out, tok.Tokenize(lines.text))
	}
	return out, lines.err
}
