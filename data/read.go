package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// ParseError is a problem with one line of an input file. Its message reads
// "data: train.de line 12: invalid UTF-8: …".
type ParseError struct {
	File string // the path as given to the reader (or the name given to ReadLines)
	Line int    // 1-based line number
	Err  error  // what is wrong: ErrInvalidUTF8, ErrNoTab or a read error
}

// Error returns "data: <file> line <n>: <problem>".
func (e *ParseError) Error() string {
	return fmt.Sprintf("data: %s line %d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrInvalidUTF8 is the cause of a ParseError for a line that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// ErrCRLineEndings is the cause of a ParseError for a last line that holds carriage returns: a file whose lines
// end in CR alone (as old Mac files do) reads as one line.
var ErrCRLineEndings = errors.New(`carriage returns (CR) inside the line, which runs to the end of the file: the file has CR line endings; convert them with tr '\r' '\n'`)

// MaxLineBytes is the longest line, without its terminator, that attend reads from any text file: corpora,
// input to translate, references and hypotheses, BPE merges, alignment files, metrics logs. 1 MiB is some
// hundred times the longest line of a real corpus (a few KB: a long sentence or a paragraph) and fits a
// 150,000-word line, yet keeps a file without newlines (/dev/zero, a binary file given by mistake) from being
// read into memory whole: such a line is an error (ErrLineTooLong) as soon as it passes the limit.
const MaxLineBytes = 1 << 20

// ErrLineTooLong is the cause of a ParseError for a line longer than MaxLineBytes.
var ErrLineTooLong = fmt.Errorf("longer than %d bytes (1 MiB), the most attend reads as one line: is it a text file of one sentence a line?", MaxLineBytes)

// MaxFileBytes is the largest file attend reads whole into memory as text (a YAML config): 16 MiB, thousands
// of times a real config, so that a special file (/dev/zero) or a wrong path fails at once (ErrFileTooLarge).
const MaxFileBytes = 16 << 20

// ErrFileTooLarge is the error of ReadFile for a file larger than MaxFileBytes.
var ErrFileTooLarge = fmt.Errorf("larger than %d bytes (16 MiB), the most attend reads whole: is it a text file?", MaxFileBytes)

// ReadFile reads the file at path whole, as os.ReadFile does, but reads no more than MaxFileBytes of it: a
// larger file (or an endless one, such as /dev/zero) gives an error that wraps ErrFileTooLarge and names path.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *os.PathError names the path
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(raw) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w", path, ErrFileTooLarge)
	}
	return raw, nil
}

// ReadLine reads one line from br, with its terminator ("\n", when it has one), as br.ReadString('\n') does,
// but refuses a line of more than MaxLineBytes before its terminator with ErrLineTooLong, having read no more
// than that much of it. At the end of the input it returns the last line (without a terminator) and io.EOF.
// Every reader of lines in attend reads through it, so that none holds an endless line in memory.
func ReadLine(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		n := len(line) + len(chunk)
		if err == bufio.ErrBufferFull {
			// The line goes on; its last byte may be the "\r" of a "\r\n", which does not count.
			if n-1 > MaxLineBytes {
				return "", ErrLineTooLong
			}
			line = append(line, chunk...)
			continue
		}
		if err == nil { // the terminator, "\n" or "\r\n", does not count
			n--
			if bytes.HasSuffix(chunk, []byte("\r\n")) || len(chunk) == 1 && bytes.HasSuffix(line, []byte("\r")) {
				n--
			}
		}
		if n > MaxLineBytes {
			return "", ErrLineTooLong
		}
		if line == nil {
			return string(chunk), err
		}
		return string(append(line, chunk...)), err
	}
}

// ErrNoTab is the cause of a ParseError for a line of a one-file corpus that is not blank but has neither a tab
// nor a " ||| " between source and target, so no second column.
var ErrNoTab = errors.New("want source<TAB>target or source ||| target, found neither")

// Pair is one sentence pair as tokens, with the 1-based line number it came from (for messages).
type Pair struct {
	Src, Tgt []string
	Line     int
}

// gzipMagic starts every gzip stream. No UTF-8 text starts with it (0x8b cannot begin a character).
const gzipMagic = "\x1f\x8b"

// Open opens a file for reading; a path ending in .gz is decompressed on the fly. Errors name the path.
func Open(path string) (io.ReadCloser, error) {
	var n int64
	return openCounted(path, &n)
}

// gzipFile is a decompressing reader over an open file; Close closes both.
type gzipFile struct {
	*gzip.Reader
	file *os.File
}

func (g *gzipFile) Close() error {
	return errors.Join(g.Reader.Close(), g.file.Close())
}

// invalidUTF8 describes the first invalid byte of s.
func invalidUTF8(s string) error {
	for off := 0; off < len(s); {
		r, size := utf8.DecodeRuneInString(s[off:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("%w: byte %#02x at offset %d", ErrInvalidUTF8, s[off], off)
		}
		off += size
	}
	return ErrInvalidUTF8
}

// ReadParallel reads two line-aligned files, source and target, tokenizing each line; line i of one file is
// the translation of line i of the other. A path ending in .gz is decompressed on the fly. Empty lines give
// pairs with an empty side (Filter drops them). Both files are read as streams, line by line.
//
// Errors name the file and the line: invalid UTF-8, a file with fewer lines than the other, a file that cannot
// be opened or read, and an empty corpus (no lines, or no tokens on any line of one of the files).
func ReadParallel(srcPath, tgtPath string, tok Tokenizer) ([]Pair, error) {
	return readPairs(CorpusFiles{Src: srcPath, Tgt: tgtPath}, tok)
}

// ReadTSV reads one file of sentence pairs, one per line: tab-separated, column 1 the source and column 2 the
// target, further columns ignored; or, in a line without a tab, source and target on either side of the first
// "|||" that stands alone between white space (fast_align's "source ||| target"). A path ending in .gz is
// decompressed on the fly. A blank line (nothing but white space) gives a pair with two empty sides; any other
// line with neither separator is an error naming the file and the line, as are invalid UTF-8 and an empty
// corpus (no lines, or no tokens in one of the two columns).
func ReadTSV(path string, tok Tokenizer) ([]Pair, error) {
	return readPairs(CorpusFiles{TSV: path}, tok)
}

// readPairs reads and tokenizes every pair of files.
func readPairs(files CorpusFiles, tok Tokenizer) ([]Pair, error) {
	var pairs []Pair
	srcWords, tgtWords := false, false
	err := files.scan(nil, func(line int, src, tgt string) error {
		p := Pair{Src: tok.Tokenize(src), Tgt: tok.Tokenize(tgt), Line: line}
		srcWords = srcWords || len(p.Src) > 0
		tgtWords = tgtWords || len(p.Tgt) > 0
		pairs = append(pairs, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := files.checkWords(srcWords, tgtWords); err != nil {
		return nil, err
	}
	return pairs, nil
}

// cutBars splits line around its first "|||" that has white space or the line's end on both sides.
func cutBars(line string) (before, after string, found bool) {
	for off := 0; ; {
		k := strings.Index(line[off:], "|||")
		if k < 0 {
			return "", "", false
		}
		k += off
		end := k + len("|||")
		if (k == 0 || isSpace(line[k-1])) && (end == len(line) || isSpace(line[end])) {
			return line[:k], line[end:], true
		}
		off = k + 1
	}
}

// isSpace reports whether b is ASCII white space.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// CorpusFiles names a parallel corpus on disk: two line-aligned files, Src and Tgt, or one TSV file with the
// source in column 1 and the target in column 2. Paths ending in .gz are decompressed on the fly.
type CorpusFiles struct {
	Src string `json:"src,omitempty"`
	Tgt string `json:"tgt,omitempty"`
	TSV string `json:"tsv,omitempty"`
}

// Empty reports whether no file is named.
func (c CorpusFiles) Empty() bool { return c == CorpusFiles{} }

// Check reports a set of files that names no corpus: want Src and Tgt, or TSV alone.
func (c CorpusFiles) Check() error {
	if c.TSV != "" && c.Src == "" && c.Tgt == "" || c.TSV == "" && c.Src != "" && c.Tgt != "" {
		return nil
	}
	return fmt.Errorf("names src %q, tgt %q and tsv %q; want src and tgt, or tsv alone", c.Src, c.Tgt, c.TSV)
}

// scan reads the corpus's lines as pairs of texts (not yet tokenized) and calls fn with each, in order, with its
// 1-based line number; fn's error stops the scan and is returned. A blank TSV line gives two empty texts. read,
// when not nil, is told how many bytes of the files (as stored, compressed or not) have been read so far. Errors
// name the file and the line, as ReadParallel's and ReadTSV's say.
func (c CorpusFiles) scan(read func(int64), fn func(line int, src, tgt string) error) error {
	if c.TSV != "" {
		return scanTSV(c.TSV, read, fn)
	}
	return scanParallel(c.Src, c.Tgt, read, fn)
}

// checkWords returns the error of a corpus with no tokens on one of its sides, naming its file (and column).
func (c CorpusFiles) checkWords(srcWords, tgtWords bool) error {
	name, detail := c.TSV, ""
	switch {
	case srcWords && tgtWords:
		return nil
	case c.TSV == "" && !srcWords:
		name = c.Src
	case c.TSV == "":
		name = c.Tgt
	case srcWords:
		detail = " (no tokens in column 2)"
	case tgtWords:
		detail = " (no tokens in column 1)"
	}
	return fmt.Errorf("data: %s: corpus is empty%s", name, detail)
}

// Size is the number of bytes of the corpus's files as stored (compressed, for a .gz file): the total that
// scan's read counts up to. It is 0 when a file cannot be examined.
func (c CorpusFiles) Size() int64 {
	var total int64
	for _, p := range []string{c.Src, c.Tgt, c.TSV} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		total += fi.Size()
	}
	return total
}

// countingReader counts the bytes read through it into *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}

// openCounted opens path as Open does, counting the bytes read from the file itself into *n.
func openCounted(path string, n *int64) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err) // *os.PathError: "open <path>: <reason>"
	}
	counted := countingReader{r: f, n: n}
	if !strings.HasSuffix(path, ".gz") {
		return struct {
			io.Reader
			io.Closer
		}{counted, f}, nil
	}
	z, err := gzip.NewReader(counted)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{z, &gzipFile{Reader: z, file: f}}, nil
}

// scanParallel is CorpusFiles.scan of two line-aligned files.
func scanParallel(srcPath, tgtPath string, read func(int64), fn func(line int, src, tgt string) error) error {
	var srcBytes, tgtBytes int64
	srcFile, err := openCounted(srcPath, &srcBytes)
	if err != nil {
		return err
	}
	defer srcFile.Close()
	tgtFile, err := openCounted(tgtPath, &tgtBytes)
	if err != nil {
		return err
	}
	defer tgtFile.Close()
	src, tgt := newLineReader(srcFile, srcPath), newLineReader(tgtFile, tgtPath)
	for {
		srcOK := src.Scan()
		if src.err != nil {
			return src.err
		}
		tgtOK := tgt.Scan()
		if tgt.err != nil {
			return tgt.err
		}
		if srcOK != tgtOK {
			short, long := src, tgt
			if srcOK {
				short, long = tgt, src
			}
			if short.line == 0 {
				return fmt.Errorf("data: %s has no lines but %s has some", short.name, long.name)
			}
			return fmt.Errorf("data: %s ended at line %d but %s has more lines", short.name, short.line, long.name)
		}
		if !srcOK {
			break
		}
		if err := fn(src.line, src.text, tgt.text); err != nil {
			return err
		}
		if read != nil {
			read(srcBytes + tgtBytes)
		}
	}
	return nil
}

// scanTSV is CorpusFiles.scan of a TSV file.
func scanTSV(path string, read func(int64), fn func(line int, src, tgt string) error) error {
	_, err := scanFile(path, read, func(line int, text string) error {
		var src, tgt string
		if strings.TrimSpace(text) != "" {
			var ok bool
			if src, tgt, ok = strings.Cut(text, "\t"); ok {
				tgt, _, _ = strings.Cut(tgt, "\t")
			} else if src, tgt, ok = cutBars(text); !ok {
				return &ParseError{File: path, Line: line, Err: ErrNoTab}
			}
		}
		return fn(line, src, tgt)
	})
	return err
}

// scanFile calls fn with each line of the file at path (.gz decompressed) and its 1-based number, then read,
// when set, with the bytes read from the file so far. It returns the bytes read from the file in all.
func scanFile(path string, read func(int64), fn func(line int, text string) error) (int64, error) {
	var n int64
	f, err := openCounted(path, &n)
	if err != nil {
		return n, err
	}
	defer f.Close()
	lines := newLineReader(f, path)
	for lines.Scan() {
		if err := fn(lines.line, lines.text); err != nil {
			return n, err
		}
		if read != nil {
			read(n)
		}
	}
	return n, lines.err
}

// ReadLines reads sentences to translate from r, one per line, and tokenizes them; name is the file name used
// in error messages ("-" means nothing special). A gzip stream is recognized by its first bytes and
// decompressed. Empty lines give empty token lists, so the result has one entry per input line; empty input
// gives no lines and no error. Invalid UTF-8 and read errors are *ParseError naming the line.
func ReadLines(r io.Reader, name string, tok Tokenizer) ([][]string, error) {
	lines := NewLines(r, name)
	var out [][]string
	for lines.Scan() {
		out = append(out, tok.Tokenize(lines.Text()))
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Lines reads a stream one line at a time, as bufio.Scanner does, for input that arrives while it is being
// processed (a pipe, a terminal): each line is available as soon as its newline is read. Lines are returned
// without the terminator ("\n" or "\r\n") and without a byte order mark on line 1, checked for UTF-8, and may be
// up to MaxLineBytes long (ReadLine). A carriage return inside the last line, which has no terminator, is an
// error: lines ending in CR alone would read as one line. A gzip stream is recognized by its first bytes and
// decompressed.
type Lines struct {
	name  string
	r     *bufio.Reader
	sniff bool   // look for the gzip magic before the first line
	line  int    // number of the current line, 0 before the first
	text  string // the current line
	err   error  // the error that stopped Scan, nil at a clean end of input
}

// NewLines returns a reader of the lines of r; name is used in error messages.
func NewLines(r io.Reader, name string) *Lines {
	return &Lines{name: name, r: bufio.NewReaderSize(r, 64<<10), sniff: true}
}

// newLineReader is NewLines of a stream already decompressed (Open, by the file's name): no gzip magic is looked
// for.
func newLineReader(r io.Reader, name string) *Lines {
	return &Lines{name: name, r: bufio.NewReaderSize(r, 64<<10)}
}

// Scan advances to the next line. It returns false at the end of the input or on an error, which Err then
// returns.
func (l *Lines) Scan() bool {
	if l.err != nil {
		return false
	}
	if l.sniff {
		l.sniff = false
		// Peek one byte before two, so that interactive input of a single character is not held up waiting
		// for a second one: no text line starts with 0x1f.
		if first, _ := l.r.Peek(1); len(first) == 1 && first[0] == gzipMagic[0] {
			if magic, _ := l.r.Peek(len(gzipMagic)); string(magic) == gzipMagic {
				z, err := gzip.NewReader(l.r)
				if err != nil {
					l.err = fmt.Errorf("data: %s: %w", l.name, err)
					return false
				}
				l.r = bufio.NewReaderSize(z, 64<<10)
			}
		}
	}
	s, err := ReadLine(l.r)
	if err == io.EOF && s == "" {
		return false
	}
	l.line++
	if err != nil && err != io.EOF {
		l.err = &ParseError{File: l.name, Line: l.line, Err: err}
		return false
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	if err == io.EOF && strings.Contains(s, "\r") {
		l.err = &ParseError{File: l.name, Line: l.line, Err: ErrCRLineEndings}
		return false
	}
	if !utf8.ValidString(s) {
		l.err = &ParseError{File: l.name, Line: l.line, Err: invalidUTF8(s)}
		return false
	}
	if l.line == 1 {
		s = strings.TrimPrefix(s, "\uFEFF")
	}
	l.text = s
	return true
}

// Text returns the current line.
func (l *Lines) Text() string { return l.text }

// Line returns the 1-based number of the current line.
func (l *Lines) Line() int { return l.line }

// Err returns the error that stopped Scan: a *ParseError naming the line, or nil at a clean end of input.
func (l *Lines) Err() error { return l.err }
