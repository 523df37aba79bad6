package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// separator reports whether the tokenizer drops r: Python's str.isspace() characters (see tokenPattern).
func separator(r rune) bool {
	return unicode.IsSpace(r) || unicode.Is(unicode.Z, r) || (r >= 0x1C && r <= 0x1F)
}

// wordRune reports whether r is a word character: a letter, a number or the underscore.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' }

// checkTokens checks tokens of line (already lowercased if the tokenizer lowercases): each is non-empty and
// holds no white space; each is a run of word characters or a single other character; together they are the
// line without its separators, in order; and tokenizing them joined by spaces gives them back.
func checkTokens(t *testing.T, line string, tokens []string) {
	t.Helper()
	for i, tok := range tokens {
		if tok == "" {
			t.Fatalf("token %d of %q is empty", i, line)
		}
		first, size := utf8.DecodeRuneInString(tok)
		if size == len(tok) {
			if separator(first) && !(first == utf8.RuneError && size == 1) {
				t.Fatalf("token %d of %q is the separator %q", i, line, tok)
			}
			continue
		}
		for _, r := range tok {
			if !wordRune(r) {
				t.Fatalf("token %d of %q, %q, mixes a word with %q", i, line, tok, r)
			}
		}
	}
	var kept strings.Builder
	for off := 0; off < len(line); {
		r, size := utf8.DecodeRuneInString(line[off:])
		if (r == utf8.RuneError && size == 1) || !separator(r) {
			kept.WriteString(line[off : off+size])
		}
		off += size
	}
	if joined := strings.Join(tokens, ""); joined != kept.String() {
		t.Fatalf("tokens of %q are %q, which lose or add text: %q, want %q", line, tokens, joined, kept.String())
	}
	if again := (&RegexTokenizer{}).Tokenize(strings.Join(tokens, " ")); !reflect.DeepEqual(again, tokens) && len(tokens) > 0 {
		t.Fatalf("tokens %q joined by spaces tokenize as %q", tokens, again)
	}
}

// FuzzTokenize checks the tokenizer's invariants (checkTokens) on any line, lowercased or not.
func FuzzTokenize(f *testing.F) {
	for _, line := range []string{"Ein Mann fährt Fahrrad.", "l'homme, c'est « ça »!", "e\u0301t\u00e9 \u00a0x\u2009y",
		"\tİstanbul ΣΟΦΟΣ\r\n", "snake_case 3.14 $5", "\xff\xfe bad", "a\x1cb\x85c\u2028d", ""} {
		f.Add(line, true)
		f.Add(line, false)
	}
	f.Add("ein rie@@ sen@@ hund@@", true)
	f.Add("a@@@ @@ b@@c l'@@", false)
	f.Fuzz(func(t *testing.T, line string, lower bool) {
		tokens := NewRegexTokenizer(lower).Tokenize(line)
		pattern := line
		if lower {
			pattern = strings.ToLower(line)
		}
		if want := tokenPattern.FindAllString(pattern, -1); !reflect.DeepEqual(tokens, want) {
			t.Fatalf("tokens of %q are %q; the pattern gives %q", line, tokens, want)
		}
		// Keeping subword markers only glues "@@" onto the token before it: with each marked token split back
		// into its text and "@", "@", the tokens are the plain ones.
		var unmarked []string
		for _, tok := range (&RegexTokenizer{Lowercase: lower, KeepBPEMarkers: true}).Tokenize(line) {
			if text, ok := strings.CutSuffix(tok, BPEMarker); ok && text != "" {
				unmarked = append(unmarked, text, "@", "@")
				continue
			}
			unmarked = append(unmarked, tok)
		}
		if !reflect.DeepEqual(unmarked, tokens) && len(tokens) > 0 {
			t.Fatalf("keeping markers, the tokens of %q are %q; plain %q", line, unmarked, tokens)
		}
		if lower {
			line = strings.ToLower(line)
		}
		checkTokens(t, line, tokens)
	})
}

// lineCount is the number of lines the readers see in content: a last line without a newline counts.
func lineCount(content []byte) int {
	n := bytes.Count(content, []byte("\n"))
	if len(content) > 0 && content[len(content)-1] != '\n' {
		n++
	}
	return n
}

func gzipped(t *testing.T, content []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	if _, err := z.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkPairs checks what a reader returned for a file of lines lines: an error names the file (and a parse
// error a line that exists), a success has one pair per line, numbered in order, with valid tokens.
func checkPairs(t *testing.T, pairs []Pair, err error, lines int, paths ...string) {
	t.Helper()
	if err != nil {
		named := false
		for _, p := range paths {
			named = named || strings.Contains(err.Error(), p)
		}
		if !named {
			t.Fatalf("error %q names none of %q", err, paths)
		}
		var pe *ParseError
		if errors.As(err, &pe) && (pe.Line < 1 || pe.Line > max(lines, 1)) {
			t.Fatalf("error %q points at line %d of a file of %d lines", err, pe.Line, lines)
		}
		return
	}
	if len(pairs) != lines {
		t.Fatalf("%d pairs from %d lines", len(pairs), lines)
	}
	for i, p := range pairs {
		if p.Line != i+1 {
			t.Fatalf("pair %d says line %d", i, p.Line)
		}
		for _, tok := range append(append([]string{}, p.Src...), p.Tgt...) {
			if tok == "" || strings.IndexFunc(tok, unicode.IsSpace) >= 0 {
				t.Fatalf("pair %d has token %q", i, tok)
			}
		}
	}
}

// sameOutcome checks that two reads of the same text (plain and compressed) agree: the same pairs, or errors
// that differ only in the file name.
func sameOutcome(t *testing.T, plain, packed []Pair, plainErr, packedErr error, plainName, packedName string) {
	t.Helper()
	if (plainErr == nil) != (packedErr == nil) {
		t.Fatalf("plain: %v; gzip: %v", plainErr, packedErr)
	}
	if plainErr != nil {
		if a, b := plainErr.Error(), strings.ReplaceAll(packedErr.Error(), packedName, plainName); a != b {
			t.Fatalf("plain and gzip errors differ:\n%s\n%s", a, b)
		}
		return
	}
	if !reflect.DeepEqual(plain, packed) {
		t.Fatal("plain and gzip reads differ")
	}
}

// FuzzReadTSV reads any bytes as a TSV corpus, plain and gzip-compressed (which must agree), and as a file
// named .gz that is not gzip at all (which must fail cleanly), and checks the result (checkPairs). The same
// bytes go through ReadLines, the reader of translate's input, plain and compressed.
func FuzzReadTSV(f *testing.F) {
	for _, seed := range []string{"ein Haus\ta house\n", "a\tb\textra\n\n  \nc d\te f", "\ufeffx\ty\r\n", "no tab\n",
		"a\tb\n\xff\tc\n", "\tonly target\n", "only source\t\n", "", "\x1f\x8b\x08\x00"} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir() // one per fuzzing process, whose inputs run one at a time: the files are rewritten
	f.Fuzz(func(t *testing.T, content []byte) {
		tok := NewRegexTokenizer(true)
		plainPath := writeTemp(t, dir, "c.tsv", content)
		gzPath := writeTemp(t, dir, "c.tsv.gz", gzipped(t, content))
		plain, plainErr := ReadTSV(plainPath, tok)
		checkPairs(t, plain, plainErr, lineCount(content), plainPath)
		packed, packedErr := ReadTSV(gzPath, tok)
		sameOutcome(t, plain, packed, plainErr, packedErr, plainPath, gzPath)

		notGzip := writeTemp(t, dir, "raw.tsv.gz", content)
		if raw, err := ReadTSV(notGzip, tok); err != nil && !strings.Contains(err.Error(), notGzip) {
			t.Fatalf("error %q does not name %s", err, notGzip)
		} else if err == nil && len(raw) == 0 {
			t.Fatal("a .gz corpus read without error gave no pairs")
		}

		lines, linesErr := ReadLines(bytes.NewReader(content), "stdin", tok)
		if bytes.HasPrefix(content, []byte(gzipMagic)) {
			return // a stream starting with the gzip magic is decompressed, so its plain reading differs
		}
		if linesErr == nil && len(lines) != lineCount(content) {
			t.Fatalf("ReadLines gave %d lines of %d", len(lines), lineCount(content))
		}
		zlines, zErr := ReadLines(bytes.NewReader(gzipped(t, content)), "stdin", tok)
		if (linesErr == nil) != (zErr == nil) || (linesErr != nil && linesErr.Error() != zErr.Error()) || !reflect.DeepEqual(lines, zlines) {
			t.Fatalf("ReadLines of plain and gzip input differ: %v / %v", linesErr, zErr)
		}
	})
}

// FuzzReadParallel reads any two byte strings as line-aligned source and target files, plain and with the
// target gzip-compressed (which must agree), and checks the result (checkPairs).
func FuzzReadParallel(f *testing.F) {
	for _, seed := range [][2]string{{"ein Haus\n", "a house\n"}, {"a\nb\nc\n", "x\ny\n"}, {"a\n\nb", "x\n\ny"},
		{"", ""}, {"\n", "\n"}, {"\ufeffa\r\n", "b\r\n"}, {"ok\n\xc3\n", "ok\nfine\n"}, {"x", "y\n"}} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	dir := f.TempDir() // one per fuzzing process, whose inputs run one at a time: the files are rewritten
	f.Fuzz(func(t *testing.T, src, tgt []byte) {
		tok := NewRegexTokenizer(true)
		srcPath, tgtPath := writeTemp(t, dir, "c.src", src), writeTemp(t, dir, "c.tgt", tgt)
		pairs, err := ReadParallel(srcPath, tgtPath, tok)
		if err == nil && lineCount(src) != lineCount(tgt) {
			t.Fatalf("%d source lines and %d target lines read without error", lineCount(src), lineCount(tgt))
		}
		checkPairs(t, pairs, err, max(lineCount(src), lineCount(tgt)), srcPath, tgtPath)
		gzPath := writeTemp(t, dir, "c.tgt.gz", gzipped(t, tgt))
		packed, packedErr := ReadParallel(srcPath, gzPath, tok)
		sameOutcome(t, pairs, packed, err, packedErr, tgtPath, gzPath)
	})
}
