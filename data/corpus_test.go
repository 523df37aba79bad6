package data

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// messyCorpus is n TSV lines of random words with what real corpora hold now and then: blank lines, empty
// sides, lines longer than a length limit, a third column, CRLF endings, a BOM, punctuation and case.
func messyCorpus(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	de := strings.Fields("ein Hund läuft über die Straße , . ! Zwei junge Männer spielen im Freien")
	en := strings.Fields("a dog runs across the street two young men play outside ? ! , the")
	side := func(words []string) string {
		k := rng.IntN(12)
		if rng.IntN(40) == 0 {
			k = 30 + rng.IntN(10) // too long for a limit of 20
		}
		parts := make([]string, k)
		for i := range parts {
			parts[i] = words[rng.IntN(len(words))]
			if rng.IntN(50) == 0 {
				parts[i] = fmt.Sprintf("rare%d", rng.IntN(1000))
			}
		}
		return strings.Join(parts, " ")
	}
	var b strings.Builder
	b.WriteString("\uFEFF")
	for i := range n {
		switch rng.IntN(30) {
		case 0:
			b.WriteString("  \n")
			continue
		case 1:
			b.WriteString(side(de) + "\t\n")
			continue
		}
		b.WriteString(side(de) + "\t" + side(en))
		if i%7 == 0 {
			b.WriteString("\tattribution")
		}
		if i%5 == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// readThenFilter is what training did before ReadCorpus: read every pair as strings, then filter them.
func readThenFilter(t *testing.T, path string, maxLen int) ([]Pair, FilterReport) {
	t.Helper()
	pairs, err := ReadTSV(path, NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	kept, report := Filter(pairs, maxLen)
	return kept, report
}

func sidesOf(pairs []Pair) (src, tgt [][]string) {
	for _, p := range pairs {
		src, tgt = append(src, p.Src), append(tgt, p.Tgt)
	}
	return src, tgt
}

// storeExamples reads every example of a Store.
func storeExamples(t *testing.T, s *Store) []Example {
	t.Helper()
	out := make([]Example, s.Len())
	for i := range out {
		var err error
		if out[i], err = s.Example(i); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestReadCorpusMatchesReadAndFilter: ReadCorpus keeps the pairs Filter keeps, with the same report, builds the
// vocabularies BuildVocab builds from them, encodes them as EncodeExamples does and counts the words of every
// pair as LearnBPE does, whatever the number of threads and whether the ids stay in memory or go to disk.
func TestReadCorpusMatchesReadAndFilter(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.tsv", messyCorpus(9000, 1))
	const maxLen = 20
	pairs, report := readThenFilter(t, path, maxLen)
	srcSents, tgtSents := sidesOf(pairs)
	wantSrc, wantTgt := BuildVocab(srcSents, 2, 0), BuildVocab(tgtSents, 2, 0)
	wantExamples := EncodeExamples(pairs, wantSrc, wantTgt)
	all, err := ReadTSV(path, NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	allSrc, allTgt := sidesOf(all)
	wantMerges := LearnBPE(append(allSrc, allTgt...), 50).Merges

	for _, c := range []struct {
		threads int
		budget  int64
		disk    bool
	}{{1, 0, false}, {3, 0, false}, {2, 1 << 30, false}, {2, 100, true}, {1, 1, true}} {
		t.Run(fmt.Sprintf("threads %d budget %d", c.threads, c.budget), func(t *testing.T) {
			var progress []int64
			corpus, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path},
				ReadOptions{Tokenizer: NewRegexTokenizer(true), MaxLen: maxLen, Threads: c.threads, Budget: c.budget, Dir: dir,
					Progress: func(n int64) { progress = append(progress, n) }})
			if err != nil {
				t.Fatal(err)
			}
			defer corpus.Close()
			if corpus.Report != report {
				t.Errorf("report %v, want %v", corpus.Report, report)
			}
			if corpus.Pairs.OnDisk() != c.disk {
				t.Errorf("on disk: %v, want %v (%d bytes of ids, budget %d)", corpus.Pairs.OnDisk(), c.disk, corpus.Pairs.Bytes(), c.budget)
			}
			if fi, _ := os.Stat(path); len(progress) == 0 || progress[len(progress)-1] != fi.Size() || !slices.IsSorted(progress) {
				t.Errorf("progress ends at %v, want rising to %d", progress[max(len(progress)-1, 0):], fi.Size())
			}
			words, counts := corpus.WordCounts()
			if got := LearnBPEProgress(words, counts, 50, nil).Merges; !reflect.DeepEqual(got, wantMerges) {
				t.Errorf("merges from the word counts differ from LearnBPE's")
			}
			src, tgt := corpus.Vocabs(2, 0)
			if !reflect.DeepEqual(src.Tokens(), wantSrc.Tokens()) || !reflect.DeepEqual(tgt.Tokens(), wantTgt.Tokens()) {
				t.Fatalf("vocabularies differ from BuildVocab's")
			}
			unknown := corpus.Encode(src, tgt)
			if got := storeExamples(t, corpus.Pairs); !reflect.DeepEqual(got, wantExamples) {
				t.Fatalf("examples differ from EncodeExamples'")
			}
			var want Unknown
			for _, e := range wantExamples {
				want.Src, want.Tgt = want.Src+int64(len(e.Src)), want.Tgt+int64(len(e.Tgt))
				for _, id := range e.Src {
					want.SrcUnk += int64(b2i(id == UnkID))
				}
				for _, id := range e.Tgt {
					want.TgtUnk += int64(b2i(id == UnkID))
				}
			}
			if unknown != want {
				t.Errorf("unknown %+v, want %+v", unknown, want)
			}
			var each []Example
			if err := corpus.Pairs.Each(func(_ int, src, tgt []int32) error {
				each = append(each, Example{Src: widen(src), Tgt: widen(tgt)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(each, wantExamples) {
				t.Fatal("Each gives other pairs than Example")
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReadCorpusParallelFiles: two line-aligned files read as one TSV file of the same lines.
func TestReadCorpusParallelFiles(t *testing.T) {
	dir := t.TempDir()
	src, tgt := syntheticCorpus(3000, 4)
	var tsv strings.Builder
	srcLines, tgtLines := strings.Split(src, "\n"), strings.Split(tgt, "\n")
	for i := range len(srcLines) - 1 {
		tsv.WriteString(srcLines[i] + "\t" + tgtLines[i] + "\n")
	}
	read := func(files CorpusFiles) []Example {
		c, err := ReadCorpus(context.Background(), files, ReadOptions{Tokenizer: NewRegexTokenizer(true), MaxLen: 15, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Encode(c.Vocabs(1, 0))
		return storeExamples(t, c.Pairs)
	}
	parallel := read(CorpusFiles{Src: writeFile(t, dir, "a.de", src), Tgt: writeFile(t, dir, "a.en.gz", tgt)})
	single := read(CorpusFiles{TSV: writeFile(t, dir, "a.tsv", tsv.String())})
	if len(parallel) == 0 || !reflect.DeepEqual(parallel, single) {
		t.Fatalf("%d pairs from two files, %d from one TSV, or they differ", len(parallel), len(single))
	}
}

// TestReadCorpusErrorsAreTheReaders': every bad input gives ReadCorpus the error ReadParallel or ReadTSV gives,
// naming the file and the line.
func TestReadCorpusErrorsAreTheReaders(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x ", 3000) // many blocks of lines before the bad one
	cases := []struct {
		name  string
		files []string // TSV, or source and target: name, content, ...
	}{
		{"invalid UTF-8 in a source", []string{"u.de", "gut\nschl\xffecht\n", "u.en", "good\nbad\n"}},
		{"invalid UTF-8 late in a gzipped target", []string{"v.de", strings.Repeat("a\n", 5000) + "b\n", "v.en.gz", strings.Repeat("a\n", 5000) + "\xc3(\n"}},
		{"target has more lines", []string{"s.de", "a\nb\n", "s.en", "a\nb\nc\n"}},
		{"target has no lines", []string{"n.de", "a\n", "n.en", ""}},
		{"TSV line without a tab after many lines", []string{"t.tsv", strings.Repeat("a\tb\n", 9000) + "no tab " + long + "\n"}},
		{"empty TSV", []string{"e.tsv", ""}},
		{"TSV with no target tokens", []string{"c.tsv", "a\t\nb\t \n"}},
		{"blank source lines", []string{"b.de", "\n  \n", "b.en", "a\nb\n"}},
		{"missing file", []string{"here.de", "a\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var files CorpusFiles
			var want error
			tok := NewRegexTokenizer(true)
			switch len(c.files) {
			case 2:
				if c.name == "missing file" {
					files = CorpusFiles{Src: writeFile(t, dir, c.files[0], c.files[1]), Tgt: filepath.Join(dir, "missing.en")}
					_, want = ReadParallel(files.Src, files.Tgt, tok)
					break
				}
				files.TSV = writeFile(t, dir, c.files[0], c.files[1])
				_, want = ReadTSV(files.TSV, tok)
			default:
				files = CorpusFiles{Src: writeFile(t, dir, c.files[0], c.files[1]), Tgt: writeFile(t, dir, c.files[2], c.files[3])}
				_, want = ReadParallel(files.Src, files.Tgt, tok)
			}
			if want == nil {
				t.Fatal("the reader finds nothing wrong")
			}
			for _, threads := range []int{1, 3} {
				_, err := ReadCorpus(context.Background(), files, ReadOptions{Tokenizer: tok, Threads: threads, Budget: 1, Dir: dir})
				if err == nil || err.Error() != want.Error() {
					t.Fatalf("threads %d: error %v, the reader's is %v", threads, err, want)
				}
				var pe, wantPE *ParseError
				if errors.As(want, &wantPE) && (!errors.As(err, &pe) || pe.File != wantPE.File || pe.Line != wantPE.Line || !errors.Is(pe.Err, cause(wantPE.Err))) {
					t.Fatalf("threads %d: %#v, want the ParseError %#v", threads, err, wantPE)
				}
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".attend-corpus-*")); len(left) > 0 {
		t.Errorf("files left behind: %v", left)
	}
}

// cause is the error err wraps, or err.
func cause(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// TestReadCorpusStops: a cancelled context stops reading with its error.
func TestReadCorpusStops(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.tsv", messyCorpus(20000, 2))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadCorpus(ctx, CorpusFiles{TSV: path}, ReadOptions{Tokenizer: NewRegexTokenizer(true), Threads: 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// TestCorpusSplitMatchesSplitPairs: splitting a corpus read as ids into subwords keeps the pairs, vocabularies
// and examples that splitting the pairs as strings and filtering them gives, in memory and on disk.
func TestCorpusSplitMatchesSplitPairs(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.tsv", messyCorpus(5000, 3))
	all, err := ReadTSV(path, NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	allSrc, allTgt := sidesOf(all)
	b := LearnBPE(append(allSrc, allTgt...), 40)
	splitSrc, splitTgt := b.ApplyAll(allSrc), b.ApplyAll(allTgt)
	split := make([]Pair, len(all))
	for i := range all {
		split[i] = Pair{Src: splitSrc[i], Tgt: splitTgt[i], Line: all[i].Line}
	}
	const maxLen = 25
	kept, report := Filter(split, maxLen)
	ks, kt := sidesOf(kept)
	wantSrc, wantTgt := BuildVocab(ks, 1, 0), BuildVocab(kt, 1, 0)
	want := EncodeExamples(kept, wantSrc, wantTgt)
	for _, budget := range []int64{0, 10} {
		words, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: NewRegexTokenizer(true), MaxLen: maxLen, Threads: 2, Budget: budget, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		c, err := words.Split(context.Background(), b, SplitOptions{MaxLen: maxLen, Threads: 3, Budget: budget, Dir: dir})
		words.Close()
		if err != nil {
			t.Fatal(err)
		}
		if c.Report != report {
			t.Errorf("budget %d: report %v, want %v", budget, c.Report, report)
		}
		src, tgt := c.Vocabs(1, 0)
		if !reflect.DeepEqual(src.Tokens(), wantSrc.Tokens()) || !reflect.DeepEqual(tgt.Tokens(), wantTgt.Tokens()) {
			t.Fatalf("budget %d: vocabularies differ", budget)
		}
		c.Encode(src, tgt)
		if got := storeExamples(t, c.Pairs); !reflect.DeepEqual(got, want) {
			t.Fatalf("budget %d: examples differ", budget)
		}
		if c.Pairs.OnDisk() != (budget > 0) {
			t.Errorf("budget %d: on disk %v", budget, c.Pairs.OnDisk())
		}
		c.Close()
	}
}

// TestWordCountsMatchLearnBPE: the word counts of text files give the merges LearnBPE learns from their lines,
// whatever the number of threads.
func TestWordCountsMatchLearnBPE(t *testing.T) {
	dir := t.TempDir()
	de, en := syntheticCorpus(6000, 5)
	paths := []string{writeFile(t, dir, "a.de", de), writeFile(t, dir, "a.en.gz", en)}
	tok := NewRegexTokenizer(true)
	var sents [][]string
	for _, text := range []string{de, en} {
		lines, err := ReadLines(strings.NewReader(text), "x", tok)
		if err != nil {
			t.Fatal(err)
		}
		sents = append(sents, lines...)
	}
	want := LearnBPE(sents, 200).Merges
	for _, threads := range []int{1, 2, 5} {
		words, counts, err := WordCounts(context.Background(), paths, tok, threads, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := LearnBPEProgress(words, counts, 200, nil).Merges; !reflect.DeepEqual(got, want) {
			t.Fatalf("threads %d: merges differ from LearnBPE's", threads)
		}
	}
	if _, _, err := WordCounts(context.Background(), []string{writeFile(t, dir, "bad.txt", "ok\n\xff\n")}, tok, 2, nil); err == nil ||
		!strings.Contains(err.Error(), "bad.txt line 2: invalid UTF-8") {
		t.Fatalf("error %v, want one naming bad.txt line 2", err)
	}
}

// TestStorePlansTheBatchesOfExamples: a Store, in memory or on disk, gives the batches MakeBatches cuts from the
// same examples in a slice, read all at once or one at a time from any batch on.
func TestStorePlansTheBatchesOfExamples(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.tsv", messyCorpus(7000, 6))
	for _, budget := range []int64{0, 1000} {
		c, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: NewRegexTokenizer(true), MaxLen: 30, Threads: 2, Budget: budget, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		c.Encode(c.Vocabs(2, 0))
		examples := storeExamples(t, c.Pairs)
		for _, opt := range []BatchOptions{{BatchSize: 32, ChunkBatches: 5, RoundLen: 4, Shuffle: true},
			{BatchSize: 64, BatchTokens: 300, ChunkBatches: 3, Shuffle: true}, {BatchSize: 50}} {
			want := MakeBatches(examples, opt, rand.New(rand.NewPCG(9, 1)))
			plan := PlanBatches(c.Pairs, opt, rand.New(rand.NewPCG(9, 1)))
			if plan.Len() != len(want) {
				t.Fatalf("%d batches planned, MakeBatches cuts %d", plan.Len(), len(want))
			}
			from := len(want) / 3
			r := plan.Read(c.Pairs, from)
			for k := range want {
				got, err := plan.Batch(k, c.Pairs)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want[k]) {
					t.Fatalf("budget %d, %+v: batch %d differs", budget, opt, k)
				}
				rows, real, srcLen, tgtLen := plan.Shape(k)
				if rows != got.Rows || real != got.Real || srcLen != got.SrcLen || tgtLen != got.TgtLen {
					t.Fatalf("batch %d: shape %d %d %d %d, the batch has %d %d %d %d", k, rows, real, srcLen, tgtLen, got.Rows, got.Real, got.SrcLen, got.TgtLen)
				}
				if k >= from {
					next, err := r.Next()
					if err != nil || !reflect.DeepEqual(next, want[k]) {
						t.Fatalf("reading from batch %d: batch %d differs (%v)", from, k, err)
					}
				}
			}
			if _, err := r.Next(); err == nil {
				t.Error("a batch past the last")
			}
			r.Close()
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStoreGoesToDiskAboveItsBudget: the ids stay in memory up to the budget and go to a file beyond it, which
// takes no name in its directory (on Unix) and is gone once the store is closed.
func TestStoreGoesToDiskAboveItsBudget(t *testing.T) {
	dir := t.TempDir()
	pair := []int32{1, 200, 70000, 5}
	fill := func(budget int64, pairs int) *Store {
		b := &storeBuilder{budget: budget, dir: dir}
		for range pairs {
			if err := b.add(pair[:2], pair[2:]); err != nil {
				t.Fatal(err)
			}
		}
		s, err := b.finish()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A pair takes 1 + 2 + 3 + 1 = 7 bytes of varints.
	for _, c := range []struct {
		budget int64
		pairs  int
		disk   bool
	}{{0, 1000, false}, {7000, 1000, false}, {6999, 1000, true}, {1, 1, true}, {1 << 20, 100000, false}} {
		s := fill(c.budget, c.pairs)
		if s.OnDisk() != c.disk || s.Bytes() != int64(7*c.pairs) {
			t.Errorf("budget %d, %d pairs: on disk %v with %d bytes, want %v with %d", c.budget, c.pairs, s.OnDisk(), s.Bytes(), c.disk, 7*c.pairs)
		}
		src, tgt, err := s.Pair(c.pairs-1, nil)
		if err != nil || !slices.Equal(src, pair[:2]) || !slices.Equal(tgt, pair[2:]) {
			t.Errorf("budget %d: last pair %v %v (%v)", c.budget, src, tgt, err)
		}
		if names, _ := os.ReadDir(dir); len(names) > 0 {
			t.Errorf("the store's file has a name: %v", names)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestReadCorpusRefusesSidesTooLongToStore: without a length limit, a side of more tokens than a Store holds is
// an error naming the file and the line.
func TestReadCorpusRefusesSidesTooLongToStore(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "x.de", "kurz\nkurz\n")
	tgt := writeFile(t, dir, "x.en", "short\n"+strings.Repeat("w ", MaxStoredLen+1)+"\n")
	_, err := ReadCorpus(context.Background(), CorpusFiles{Src: src, Tgt: tgt}, ReadOptions{Tokenizer: NewRegexTokenizer(true)})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != tgt || pe.Line != 2 || !strings.Contains(err.Error(), "a side of 65536 tokens") {
		t.Fatalf("error %v, want one naming %s line 2", err, tgt)
	}
}

// TestReadCorpusKeepsLines: with KeepLines, each pair kept is the tokenized line Lines names, across blank
// lines, empty sides and lines too long for data.max_len; without it, Lines is nil.
func TestReadCorpusKeepsLines(t *testing.T) {
	text := messyCorpus(3000, 7)
	path := writeFile(t, t.TempDir(), "m.tsv", text)
	tok := NewRegexTokenizer(true)
	c, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: tok, MaxLen: 20, Threads: 2, KeepLines: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Lines) != c.Pairs.Len() || c.Report.Kept == c.Report.Total {
		t.Fatalf("%d lines for %d pairs (%s)", len(c.Lines), c.Pairs.Len(), c.Report)
	}
	lines := strings.Split(strings.TrimPrefix(text, "\uFEFF"), "\n")
	for i, line := range c.Lines {
		src, tgt, err := c.Pairs.Pair(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Split(strings.TrimSuffix(lines[line-1], "\r"), "\t")
		for side, ids := range [][]int32{src, tgt} {
			var got []string
			for _, id := range ids {
				got = append(got, c.tokens[id])
			}
			if want := tok.Tokenize(fields[side]); !slices.Equal(got, want) {
				t.Fatalf("pair %d, line %d side %d: %q, the line says %q", i, line, side, got, want)
			}
		}
	}
	plain, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: tok, MaxLen: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Lines != nil {
		t.Fatalf("Lines kept without KeepLines: %d", len(plain.Lines))
	}
}

// TestSplitKeepsLinesAndTellsWordsOfSubwords: Split of a corpus read with KeepLines keeps the line of every
// pair it keeps, across the subword length filter, and Kept hears each pair kept with its index in the corpus
// split and the word of each subword, as BPE.Split gives them for the pair's words.
func TestSplitKeepsLinesAndTellsWordsOfSubwords(t *testing.T) {
	dir := t.TempDir()
	text := messyCorpus(3000, 11)
	path := writeFile(t, dir, "m.tsv", text)
	tok := NewRegexTokenizer(true)
	const maxLen = 20
	words, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: tok, MaxLen: maxLen, Threads: 2, KeepLines: true})
	if err != nil {
		t.Fatal(err)
	}
	defer words.Close()
	tokens, counts := words.WordCounts()
	b := LearnBPEProgress(tokens, counts, 30, nil) // few merges: many words stay several subwords
	for _, budget := range []int64{0, 10} {
		var kept []int
		var srcWordOfs, tgtWordOfs [][]int
		split, err := words.Split(context.Background(), b, SplitOptions{MaxLen: maxLen, Threads: 2, Budget: budget, Dir: dir,
			Kept: func(pair int, srcWordOf, tgtWordOf []int) {
				kept = append(kept, pair)
				srcWordOfs, tgtWordOfs = append(srcWordOfs, slices.Clone(srcWordOf)), append(tgtWordOfs, slices.Clone(tgtWordOf))
			}})
		if err != nil {
			t.Fatal(err)
		}
		if split.Report.TooLong <= words.Report.TooLong || len(split.Lines) != split.Pairs.Len() || len(kept) != split.Pairs.Len() {
			t.Fatalf("budget %d: %s after %s; %d lines and %d calls for %d pairs", budget, split.Report, words.Report,
				len(split.Lines), len(kept), split.Pairs.Len())
		}
		for k, i := range kept {
			if k > 0 && i <= kept[k-1] {
				t.Fatalf("budget %d: pairs kept out of order: %v", budget, kept[:k+1])
			}
			if split.Lines[k] != words.Lines[i] {
				t.Fatalf("budget %d: pair %d (pair %d of the words) has line %d, want %d", budget, k, i, split.Lines[k], words.Lines[i])
			}
			wordIDs, tgtIDs, err := words.Pairs.Pair(i, nil)
			if err != nil {
				t.Fatal(err)
			}
			for side, ids := range [][]int32{wordIDs, tgtIDs} {
				var ws []string
				for _, id := range ids {
					ws = append(ws, words.tokens[id])
				}
				_, wantWordOf := b.Split(ws)
				got := [][]int{srcWordOfs[k], tgtWordOfs[k]}[side]
				if !slices.Equal(got, wantWordOf) {
					t.Fatalf("budget %d: pair %d side %d (%q): words of the subwords %v, want %v", budget, k, side, ws, got, wantWordOf)
				}
			}
		}
		split.Close()
	}
	unlined, err := ReadCorpus(context.Background(), CorpusFiles{TSV: path}, ReadOptions{Tokenizer: tok, MaxLen: maxLen})
	if err != nil {
		t.Fatal(err)
	}
	defer unlined.Close()
	plain, err := unlined.Split(context.Background(), b, SplitOptions{MaxLen: maxLen})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Lines != nil {
		t.Fatalf("Lines after splitting a corpus without them: %d", len(plain.Lines))
	}
}
