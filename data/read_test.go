package data

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if strings.HasSuffix(name, ".gz") {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		z := gzip.NewWriter(f)
		z.Write([]byte(content))
		z.Close()
		f.Close()
		return path
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadParallelPlainAndGzip(t *testing.T) {
	dir := t.TempDir()
	src := write(t, dir, "a.de", "\uFEFFEin Hund.\r\nZwei Katzen\n")
	tgt := write(t, dir, "a.en.gz", "A dog.\nTwo cats\n")
	pairs, err := ReadParallel(src, tgt, NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || strings.Join(pairs[0].Src, " ") != "ein hund ." || strings.Join(pairs[1].Tgt, " ") != "two cats" || pairs[1].Line != 2 {
		t.Fatalf("got %+v", pairs)
	}
}

func TestReadTSVIgnoresExtraColumns(t *testing.T) {
	path := write(t, t.TempDir(), "fra.txt", "Go.\tVa !\tCC-BY 2.0\nRun!\tCours !\n")
	pairs, err := ReadTSV(path, NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || strings.Join(pairs[0].Tgt, " ") != "va !" || strings.Join(pairs[1].Src, " ") != "run !" {
		t.Fatalf("got %+v", pairs)
	}
}

// TestBadInputNamesFileAndLine checks every malformed-input case gives an error naming the file and the line.
func TestBadInputNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	tok := NewRegexTokenizer(true)
	cases := []struct {
		name string
		read func() error
		want []string
	}{
		{"invalid UTF-8", func() error {
			_, err := ReadParallel(write(t, dir, "u.de", "gut\nschl\xffecht\n"), write(t, dir, "u.en", "good\nbad\n"), tok)
			return err
		}, []string{"u.de line 2", "invalid UTF-8"}},
		{"target longer", func() error {
			_, err := ReadParallel(write(t, dir, "s.de", "a\nb\n"), write(t, dir, "s.en", "a\nb\nc\n"), tok)
			return err
		}, []string{"s.de ended at line 2", "s.en has more lines"}},
		{"source longer", func() error {
			_, err := ReadParallel(write(t, dir, "l.de", "a\nb\nc\n"), write(t, dir, "l.en", "a\n"), tok)
			return err
		}, []string{"l.en ended at line 1", "l.de has more lines"}},
		{"TSV without a tab", func() error {
			_, err := ReadTSV(write(t, dir, "t.tsv", "a\tb\nno tab here\n"), tok)
			return err
		}, []string{"t.tsv line 2", "tab"}},
		{"empty corpus", func() error {
			_, err := ReadParallel(write(t, dir, "e.de", ""), write(t, dir, "e.en", ""), tok)
			return err
		}, []string{"e.de", "empty"}},
		{"blank corpus", func() error {
			_, err := ReadTSV(write(t, dir, "b.tsv", "\n\n"), tok)
			return err
		}, []string{"b.tsv", "empty"}},
		{"missing file", func() error {
			_, err := ReadParallel(filepath.Join(dir, "missing.de"), write(t, dir, "m.en", "a\n"), tok)
			return err
		}, []string{"missing.de"}},
		{"corrupt gzip", func() error {
			writeBytes(t, filepath.Join(dir, "c.en.gz"), []byte("not gzip"))
			_, err := ReadParallel(write(t, dir, "c.de", "x\n"), filepath.Join(dir, "c.en.gz"), tok)
			return err
		}, []string{"c.en.gz"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.read()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	_, err := ReadParallel(write(t, dir, "v.de", "\xff\n"), write(t, dir, "v.en", "a\n"), tok)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8 error %v is not a ParseError for line 1 wrapping ErrInvalidUTF8", err)
	}
}

func TestReadLinesKeepsEmptyLines(t *testing.T) {
	got, err := ReadLines(strings.NewReader("Ein Hund\n\nzwei"), "stdin", NewRegexTokenizer(true))
	if err != nil || len(got) != 3 || len(got[1]) != 0 || got[2][0] != "zwei" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := ReadLines(strings.NewReader("ok\n\xfe\n"), "stdin", NewRegexTokenizer(true)); err == nil || !strings.Contains(err.Error(), "stdin line 2") {
		t.Fatalf("invalid UTF-8 on stdin: %v", err)
	}
}

func TestReadHandlesLongLines(t *testing.T) {
	long := strings.Repeat("wort ", 100000)
	dir := t.TempDir()
	pairs, err := ReadParallel(write(t, dir, "x.de", long+"\n"), write(t, dir, "x.en", "a\n"), NewRegexTokenizer(true))
	if err != nil || len(pairs[0].Src) != 100000 {
		t.Fatalf("long line: %d tokens, %v", len(pairs[0].Src), err)
	}
}

func TestFilterCountsWhatItDrops(t *testing.T) {
	pairs := []Pair{
		{Src: []string{"a"}, Tgt: []string{"b"}},
		{Src: nil, Tgt: []string{"b"}},
		{Src: []string{"a", "b", "c"}, Tgt: []string{"b"}},
		{Src: []string{"a"}, Tgt: nil},
	}
	kept, rep := Filter(pairs, 2)
	if len(kept) != 1 || rep != (FilterReport{Total: 4, Kept: 1, EmptySide: 2, TooLong: 1, MaxLen: 2}) {
		t.Fatalf("kept %d, report %+v", len(kept), rep)
	}
	if want := "kept 1 of 4 pairs (dropped 2 with an empty side, 1 longer than 2 tokens)"; rep.String() != want {
		t.Fatalf("report %q, want %q", rep, want)
	}
}

func writeBytes(tb testing.TB, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}
