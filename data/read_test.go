package data

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFile writes content to dir/name, gzipped when name ends in .gz, and returns the path.
func writeFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	data := []byte(content)
	if strings.HasSuffix(name, ".gz") {
		data = gzipBytes(tb, content)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func gzipBytes(tb testing.TB, content string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	if _, err := z.Write([]byte(content)); err != nil {
		tb.Fatal(err)
	}
	if err := z.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadParallelReadsPlainAndGzipFiles(t *testing.T) {
	// A BOM on line 1, CRLF, edge white space, an empty target line and no final newline.
	const src = "\uFEFFEin Hund.\r\n  Zwei Katzen  \nDrei Vögel\nVier"
	const tgt = "A dog.\r\nTwo cats\n\nFour\n"
	want := []Pair{
		{Src: []string{"ein", "hund", "."}, Tgt: []string{"a", "dog", "."}, Line: 1},
		{Src: []string{"zwei", "katzen"}, Tgt: []string{"two", "cats"}, Line: 2},
		{Src: []string{"drei", "vögel"}, Tgt: nil, Line: 3},
		{Src: []string{"vier"}, Tgt: []string{"four"}, Line: 4},
	}
	for _, names := range [][2]string{{"a.de", "a.en"}, {"a.de.gz", "a.en"}, {"a.de", "a.en.gz"}, {"a.de.gz", "a.en.gz"}} {
		t.Run(names[0]+"+"+names[1], func(t *testing.T) {
			dir := t.TempDir()
			got, err := ReadParallel(writeFile(t, dir, names[0], src), writeFile(t, dir, names[1], tgt), NewRegexTokenizer(true))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestReadParallelKeepsCaseWhenTokenizerDoes(t *testing.T) {
	dir := t.TempDir()
	got, err := ReadParallel(writeFile(t, dir, "c.de", "Straße\n"), writeFile(t, dir, "c.en", "Street\n"), NewRegexTokenizer(false))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Pair{{Src: []string{"Straße"}, Tgt: []string{"Street"}, Line: 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// wholeLine is a Tokenizer that returns the line as read, to see exactly what the readers pass on.
type wholeLine struct{}

func (wholeLine) Tokenize(line string) []string { return []string{line} }

// TestReadersStripBOMAndLineEndingsOnly checks that a reader hands the tokenizer each line without "\n",
// "\r\n" and a BOM at the start of the file, and changes nothing else (white space is the tokenizer's job).
func TestReadersStripBOMAndLineEndingsOnly(t *testing.T) {
	dir := t.TempDir()
	const text = "\uFEFF a\r\n\uFEFFb \r\r\nc\rd\n"
	want := []string{" a", "\uFEFFb \r", "c\rd"}
	pairs, err := ReadParallel(writeFile(t, dir, "w.de", text), writeFile(t, dir, "w.en.gz", text), wholeLine{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		if p.Src[0] != want[i] || p.Tgt[0] != want[i] || p.Line != i+1 {
			t.Errorf("pair %d: %q / %q on line %d, want %q on line %d", i, p.Src[0], p.Tgt[0], p.Line, want[i], i+1)
		}
	}
	if len(pairs) != len(want) {
		t.Errorf("%d pairs, want %d", len(pairs), len(want))
	}
	lines, err := ReadLines(strings.NewReader(text), "w.txt", wholeLine{})
	if err != nil || !reflect.DeepEqual(lines, [][]string{{want[0]}, {want[1]}, {want[2]}}) {
		t.Errorf("ReadLines gave %q, %v", lines, err)
	}
}

func TestReadTSVTakesTwoColumnsAndIgnoresTheRest(t *testing.T) {
	const content = "\uFEFFGo.\tVa !\tCC-BY 2.0 (France) Attribution\r\n\nRun!\tCours\u202f!\n  \t \nHi.\t\n"
	want := []Pair{
		{Src: []string{"go", "."}, Tgt: []string{"va", "!"}, Line: 1},
		{Line: 2},
		{Src: []string{"run", "!"}, Tgt: []string{"cours", "!"}, Line: 3},
		{Line: 4},
		{Src: []string{"hi", "."}, Tgt: nil, Line: 5},
	}
	for _, name := range []string{"fra.txt", "fra.txt.gz"} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadTSV(writeFile(t, t.TempDir(), name, content), NewRegexTokenizer(true))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// fast_align's format: source and target around a lone "|||"; a "|||" inside a word is text.
func TestReadTSVTakesBarSeparatedLines(t *testing.T) {
	const content = "2 .   ||| 2 .  \nMr. Smith ||| M. |||Smith\na|||b ||| c\n||| only target\n\nfirst\tsecond ||| third\n"
	want := []Pair{
		{Src: []string{"2", "."}, Tgt: []string{"2", "."}, Line: 1},
		{Src: []string{"Mr.", "Smith"}, Tgt: []string{"M.", "|||Smith"}, Line: 2},
		{Src: []string{"a|||b"}, Tgt: []string{"c"}, Line: 3},
		{Src: nil, Tgt: []string{"only", "target"}, Line: 4},
		{Line: 5},
		{Src: []string{"first"}, Tgt: []string{"second", "|||", "third"}, Line: 6}, // a tab comes first
	}
	got, err := ReadTSV(writeFile(t, t.TempDir(), "enfr.src-tgt", content), WhitespaceTokenizer{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if _, err := ReadTSV(writeFile(t, t.TempDir(), "x.txt", "a\tb\nonly|||bars\n"), WhitespaceTokenizer{}); !errors.Is(err, ErrNoTab) {
		t.Errorf("a line whose bars touch its words: %v, want ErrNoTab", err)
	}
}

func TestReadLinesKeepsOneEntryPerLine(t *testing.T) {
	const text = "\uFEFFEin Hund\r\n\n  \nZwei Katzen"
	want := [][]string{{"ein", "hund"}, nil, nil, {"zwei", "katzen"}}
	for _, c := range []struct {
		name  string
		input []byte
	}{{"plain", []byte(text)}, {"gzip stream", gzipBytes(t, text)}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadLines(bytes.NewReader(c.input), "-", NewRegexTokenizer(true))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
	got, err := ReadLines(strings.NewReader(""), "empty.txt", NewRegexTokenizer(true))
	if err != nil || len(got) != 0 {
		t.Fatalf("empty input: got %q, %v; want no lines and no error", got, err)
	}
}

func TestReadHandlesLinesLongerThanScannerLimit(t *testing.T) {
	const words = 50000 // 250 kB on one line, far past bufio.Scanner's 64 KiB default
	long := strings.Repeat("wort ", words)
	dir := t.TempDir()
	pairs, err := ReadParallel(writeFile(t, dir, "x.de", "kurz\n"+long+"\n"), writeFile(t, dir, "x.en", "short\nlong\n"), NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || len(pairs[1].Src) != words || pairs[1].Src[words-1] != "wort" || pairs[1].Line != 2 {
		t.Fatalf("long line: %d pairs, %d tokens", len(pairs), len(pairs[1].Src))
	}
	lines, err := ReadLines(strings.NewReader(long), "long.txt", NewRegexTokenizer(true))
	if err != nil || len(lines) != 1 || len(lines[0]) != words {
		t.Fatalf("ReadLines on a long line: %d lines, %v", len(lines), err)
	}
}

// TestBadInputNamesFileAndLine checks the exact message of every malformed-input case, and that line-level
// problems are *ParseError values with the file, the line and a cause that errors.Is finds.
func TestBadInputNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	tok := NewRegexTokenizer(true)
	parallel := func(src, srcText, tgt, tgtText string) func() error {
		return func() error {
			_, err := ReadParallel(writeFile(t, dir, src, srcText), writeFile(t, dir, tgt, tgtText), tok)
			return err
		}
	}
	tsv := func(name, text string) func() error {
		return func() error {
			_, err := ReadTSV(writeFile(t, dir, name, text), tok)
			return err
		}
	}
	cases := []struct {
		name string
		read func() error
		want string
		// for a *ParseError: its fields and cause
		file  string
		line  int
		cause error
	}{
		{name: "invalid UTF-8 in the source",
			read: parallel("u.de", "gut\nschl\xffecht\n", "u.en", "good\nbad\n"),
			want: "data: " + path("u.de") + " line 2: invalid UTF-8: byte 0xff at offset 4",
			file: path("u.de"), line: 2, cause: ErrInvalidUTF8},
		{name: "invalid UTF-8 in a gzipped target",
			read: parallel("v.de", "a\nb\nc\n", "v.en.gz", "a\nb\n\xc3(\n"),
			want: "data: " + path("v.en.gz") + " line 3: invalid UTF-8: byte 0xc3 at offset 0",
			file: path("v.en.gz"), line: 3, cause: ErrInvalidUTF8},
		{name: "invalid UTF-8 after a BOM",
			read: parallel("w.de", "\uFEFFa\xe2\x82\n", "w.en", "a\n"),
			want: "data: " + path("w.de") + " line 1: invalid UTF-8: byte 0xe2 at offset 4",
			file: path("w.de"), line: 1, cause: ErrInvalidUTF8},
		{name: "invalid UTF-8 in TSV",
			read: tsv("u.tsv", "a\tb\nc\td\ne\tf\xfe\n"),
			want: "data: " + path("u.tsv") + " line 3: invalid UTF-8: byte 0xfe at offset 3",
			file: path("u.tsv"), line: 3, cause: ErrInvalidUTF8},
		{name: "invalid UTF-8 in ReadLines",
			read: func() error {
				_, err := ReadLines(strings.NewReader("ok\nnot \x80 ok\n"), "input.txt", tok)
				return err
			},
			want: "data: input.txt line 2: invalid UTF-8: byte 0x80 at offset 4",
			file: "input.txt", line: 2, cause: ErrInvalidUTF8},
		{name: "CR line endings in the source",
			read: parallel("cr.de", "ein mann\rzwei frauen\rdrei kinder\r", "cr.en", "a man\ntwo women\nthree children\n"),
			want: "data: " + path("cr.de") + " line 1: " + ErrCRLineEndings.Error(),
			file: path("cr.de"), line: 1, cause: ErrCRLineEndings},
		{name: "CR line endings after LF lines in TSV",
			read: tsv("cr.tsv", "a\tb\nc\td\re\tf\r"),
			want: "data: " + path("cr.tsv") + " line 2: " + ErrCRLineEndings.Error(),
			file: path("cr.tsv"), line: 2, cause: ErrCRLineEndings},
		{name: "CR line endings in ReadLines",
			read: func() error {
				_, err := ReadLines(strings.NewReader("ein mann\rzwei frauen"), "input.txt", tok)
				return err
			},
			want: "data: input.txt line 1: " + ErrCRLineEndings.Error(),
			file: "input.txt", line: 1, cause: ErrCRLineEndings},
		{name: "target has more lines",
			read: parallel("s.de", "a\nb\n", "s.en", "a\nb\nc\n"),
			want: "data: " + path("s.de") + " ended at line 2 but " + path("s.en") + " has more lines"},
		{name: "source has more lines",
			read: parallel("l.de", "a\nb\nc\n", "l.en.gz", "a\n"),
			want: "data: " + path("l.en.gz") + " ended at line 1 but " + path("l.de") + " has more lines"},
		{name: "target file has no lines",
			read: parallel("n.de", "a\n", "n.en", ""),
			want: "data: " + path("n.en") + " has no lines but " + path("n.de") + " has some"},
		{name: "TSV line without a tab",
			read: tsv("t.tsv", "a\tb\nno tab here\n"),
			want: "data: " + path("t.tsv") + " line 2: want source<TAB>target or source ||| target, found neither",
			file: path("t.tsv"), line: 2, cause: ErrNoTab},
		{name: "empty files",
			read: parallel("e.de", "", "e.en", ""),
			want: "data: " + path("e.de") + ": corpus is empty"},
		{name: "source lines all blank",
			read: parallel("b.de", "\n  \n\t\n", "b.en", "a\nb\nc\n"),
			want: "data: " + path("b.de") + ": corpus is empty"},
		{name: "target lines all blank",
			read: parallel("bt.de", "a\nb\n", "bt.en", "\n \n"),
			want: "data: " + path("bt.en") + ": corpus is empty"},
		{name: "empty TSV",
			read: tsv("e.tsv", ""),
			want: "data: " + path("e.tsv") + ": corpus is empty"},
		{name: "blank TSV",
			read: tsv("b.tsv", "\n \n\t\n"),
			want: "data: " + path("b.tsv") + ": corpus is empty"},
		{name: "TSV with an empty target column",
			read: tsv("c.tsv", "a\t\nb\t \n"),
			want: "data: " + path("c.tsv") + ": corpus is empty (no tokens in column 2)"},
		{name: "missing source file",
			read: func() error {
				_, err := ReadParallel(path("missing.de"), writeFile(t, dir, "m.en", "a\n"), tok)
				return err
			},
			want:  "data: open " + path("missing.de") + ": no such file or directory",
			cause: fs.ErrNotExist},
		{name: "missing target file",
			read: func() error {
				_, err := ReadParallel(writeFile(t, dir, "m.de", "a\n"), path("missing.en.gz"), tok)
				return err
			},
			want:  "data: open " + path("missing.en.gz") + ": no such file or directory",
			cause: fs.ErrNotExist},
		{name: "missing TSV file",
			read: func() error {
				_, err := ReadTSV(path("missing.tsv"), tok)
				return err
			},
			want:  "data: open " + path("missing.tsv") + ": no such file or directory",
			cause: fs.ErrNotExist},
		{name: "not gzip",
			read: func() error {
				writeBytes(t, path("c.en.gz"), []byte("plain text\n"))
				_, err := ReadParallel(writeFile(t, dir, "c.de", "x\n"), path("c.en.gz"), tok)
				return err
			},
			want:  "data: " + path("c.en.gz") + ": gzip: invalid header",
			cause: gzip.ErrHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.read()
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != c.want {
				t.Fatalf("error\n%q, want\n%q", err, c.want)
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Errorf("errors.Is(%v, %v) is false", err, c.cause)
			}
			var pe *ParseError
			if isParse := errors.As(err, &pe); isParse != (c.line > 0) {
				t.Fatalf("errors.As(*ParseError) = %v for %v", isParse, err)
			}
			if c.line > 0 && (pe.File != c.file || pe.Line != c.line) {
				t.Errorf("ParseError{File: %q, Line: %d}, want {%q, %d}", pe.File, pe.Line, c.file, c.line)
			}
		})
	}
}

func TestTruncatedGzipIsAParseError(t *testing.T) {
	dir := t.TempDir()
	full := gzipBytes(t, "a\nb\nc\n")
	tgt := filepath.Join(dir, "cut.en.gz")
	writeBytes(t, tgt, full[:len(full)-4]) // lose the length in the gzip trailer
	_, err := ReadParallel(writeFile(t, dir, "cut.de", "a\nb\nc\n"), tgt, NewRegexTokenizer(true))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != tgt || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want a ParseError for %s wrapping io.ErrUnexpectedEOF", err, tgt)
	}
	if !strings.HasPrefix(err.Error(), "data: "+tgt+" line ") {
		t.Fatalf("message %q does not name the file and line", err)
	}
}

func writeBytes(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// syntheticCorpus returns n lines of German-like and English-like text with punctuation and umlauts.
func syntheticCorpus(n int, seed uint64) (src, tgt string) {
	rng := rand.New(rand.NewPCG(seed, 0))
	de := strings.Fields("ein eine zwei junge Männer Frau Hund läuft über die Straße im Freien vor einem großen " +
		"Gebäude , . „ “ ! 3,5 Büsche Kinder spielen")
	en := strings.Fields("a an two young men woman dog runs across the street outside in front of large " +
		"building , . \" ! 3.5 bushes children play")
	line := func(words []string) string {
		parts := make([]string, 5+rng.IntN(20))
		for i := range parts {
			parts[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(parts, " ")
	}
	var s, t strings.Builder
	for range n {
		s.WriteString(line(de) + "\n")
		t.WriteString(line(en) + "\n")
	}
	return s.String(), t.String()
}

// BenchmarkReadParallel reads and tokenizes a generated 10,000-line parallel corpus.
func BenchmarkReadParallel(b *testing.B) {
	dir := b.TempDir()
	src, tgt := syntheticCorpus(10000, 1)
	srcPath, tgtPath := writeFile(b, dir, "bench.de", src), writeFile(b, dir, "bench.en", tgt)
	tok := NewRegexTokenizer(true)
	b.SetBytes(int64(len(src) + len(tgt)))
	for b.Loop() {
		pairs, err := ReadParallel(srcPath, tgtPath, tok)
		if err != nil || len(pairs) != 10000 {
			b.Fatalf("%d pairs, %v", len(pairs), err)
		}
	}
}

// endless is an io.Reader of bytes without a newline, as /dev/zero is, that counts what it gave: 64 times
// MaxLineBytes of them, then io.EOF, so that a reader that takes the line whole fails the test instead of the
// machine.
type endless struct {
	b    byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= 64*MaxLineBytes {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), 64*MaxLineBytes-e.read)]
	for i := range p {
		p[i] = e.b
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestEndlessLineIsRefusedAtTheLimit is issue #51's case 1: a stream without newlines (/dev/zero) grew a line in
// memory without bound. Every reader of lines stops just past MaxLineBytes with ErrLineTooLong, naming the file
// and the line; a line of exactly MaxLineBytes (with or without "\r\n") is still read.
func TestEndlessLineIsRefusedAtTheLimit(t *testing.T) {
	for _, b := range []byte{0, 'a'} {
		src := &endless{b: b}
		lines := NewLines(io.MultiReader(strings.NewReader("erste zeile\n"), src), "zero.de")
		n := 0
		for lines.Scan() {
			n++
		}
		var perr *ParseError
		if err := lines.Err(); !errors.Is(err, ErrLineTooLong) || !errors.As(err, &perr) || perr.File != "zero.de" || perr.Line != 2 || n != 1 {
			t.Fatalf("byte %#x: %d lines, then %v; want line 1, then a ParseError of zero.de line 2 wrapping ErrLineTooLong", b, n, err)
		}
		if src.read > 2*MaxLineBytes {
			t.Fatalf("byte %#x: read %d bytes of an endless line before refusing it; want about %d", b, src.read, MaxLineBytes)
		}
	}
	for _, end := range []string{"", "\n", "\r\n"} {
		line := strings.Repeat("x", MaxLineBytes)
		next := "y\n" // a line after it; none after a last line without its terminator
		if end == "" {
			next = ""
		}
		got, err := ReadLines(strings.NewReader(line+end+next), "max.txt", WhitespaceTokenizer{})
		if err != nil || len(got) != 1+len(next)/2 || len(got[0][0]) != MaxLineBytes {
			t.Fatalf("a line of MaxLineBytes ending %q: %d lines, %v", end, len(got), err)
		}
		if _, err := ReadLines(strings.NewReader("x"+line+end), "over.txt", WhitespaceTokenizer{}); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("a line of MaxLineBytes+1 ending %q: %v; want ErrLineTooLong", end, err)
		}
	}
	dir := t.TempDir()
	long := strings.Repeat("wort ", MaxLineBytes/5+1)
	for _, c := range []struct {
		name string
		read func() error
	}{
		{"parallel", func() error {
			_, err := ReadParallel(writeFile(t, dir, "p.de", "a\n"+long+"\n"), writeFile(t, dir, "p.en", "a\nb\n"), WhitespaceTokenizer{})
			return err
		}},
		{"tsv", func() error {
			_, err := ReadTSV(writeFile(t, dir, "p.tsv.gz", "a\tb\n"+long), WhitespaceTokenizer{})
			return err
		}},
		{"bpe", func() error { _, err := ReadBPE(strings.NewReader("#version: 0.2\n"+long), "codes.bpe"); return err }},
		{"word counts", func() error {
			_, _, err := WordCounts(context.Background(), []string{writeFile(t, dir, "w.txt", "a\n"+long)}, WhitespaceTokenizer{}, 1, nil)
			return err
		}},
	} {
		var perr *ParseError
		if err := c.read(); !errors.Is(err, ErrLineTooLong) || !errors.As(err, &perr) || perr.Line != 2 {
			t.Errorf("%s: %v; want a ParseError of line 2 wrapping ErrLineTooLong", c.name, err)
		}
	}
}

// TestReadFileRefusesWhatIsTooLarge: a whole-file read (a config) stops at MaxFileBytes, naming the file.
func TestReadFileRefusesWhatIsTooLarge(t *testing.T) {
	dir := t.TempDir()
	small := writeFile(t, dir, "c.yaml", "train:\n  epochs: 1\n")
	if raw, err := ReadFile(small); err != nil || string(raw) != "train:\n  epochs: 1\n" {
		t.Fatalf("ReadFile(%s) = %q, %v", small, raw, err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big); !errors.Is(err, ErrFileTooLarge) || !strings.Contains(err.Error(), big) {
		t.Fatalf("ReadFile of %d bytes: %v; want ErrFileTooLarge naming the file", MaxFileBytes+1, err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero"); !errors.Is(err, ErrFileTooLarge) {
			t.Fatalf("ReadFile(/dev/zero): %v; want ErrFileTooLarge", err)
		}
	}
}
