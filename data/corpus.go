package data

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
)

// ReadOptions control ReadCorpus.
type ReadOptions struct {
	// Tokenizer splits each line; it is called from several goroutines at once (RegexTokenizer may be).
	Tokenizer Tokenizer
	// MaxLen drops the pairs with a side longer than this many tokens, as Filter does (<= 0: no limit; a side may
	// still have at most MaxStoredLen tokens).
	MaxLen int
	// Threads tokenize in parallel (<= 0: one per CPU). The result is the same whatever their number.
	Threads int
	// Budget is how many bytes of token ids the corpus may keep in memory (varints: see Store); a corpus with
	// more is kept on disk, in a file in Dir (the system's temporary directory when empty). <= 0: no limit.
	Budget int64
	Dir    string
	// Progress, when set, is called from time to time with the bytes of the files read so far (of
	// CorpusFiles.Size in all).
	Progress func(read int64)
	// KeepLines keeps the line of every pair kept (Corpus.Lines), to find what else a file line-aligned with the
	// corpus says of each pair.
	KeepLines bool
}

// Corpus is a parallel corpus read for training: its pairs filtered as Filter filters them, held as the ids of
// a dictionary of the corpus's distinct tokens (Pairs), with how often each token occurs on each side of the
// pairs kept, from which the vocabularies are built, and on both sides of every pair read, from which subword
// merges are learned. Holding ids rather than strings takes a fraction of the memory; Encode then turns the ids
// into the vocabularies'.
type Corpus struct {
	// Report counts the pairs read, kept and dropped.
	Report FilterReport
	// Pairs holds the pairs kept, in the corpus's order, as dictionary ids until Encode.
	Pairs *Store
	// Lines is the line (from 1) of each pair of Pairs in the corpus's files, with ReadOptions.KeepLines; nil
	// otherwise.
	Lines []int32

	tokens               []string // the dictionary: the distinct tokens, in order of first appearance
	srcCounts, tgtCounts []int64  // occurrences of each token on each side of the pairs kept
	allCounts            []int64  // occurrences on both sides of every pair read, kept or not
	encoded              bool
}

// Close releases the file of a corpus kept on disk.
func (c *Corpus) Close() error { return c.Pairs.Close() }

// ReadCorpus reads, tokenizes and filters a parallel corpus as ReadParallel or ReadTSV and then Filter do, with
// the same errors, but keeps only token ids (see Corpus) and tokenizes on several threads. The file is read
// once, as a stream; ctx stops it between blocks of lines.
func ReadCorpus(ctx context.Context, files CorpusFiles, opt ReadOptions) (*Corpus, error) {
	d := newDict()
	c := &Corpus{Report: FilterReport{MaxLen: opt.MaxLen}}
	b := &storeBuilder{budget: opt.Budget, dir: opt.Dir}
	srcWords, tgtWords := false, false
	scan := func(emit func(line int, texts ...string) error) error {
		return files.scan(opt.Progress, func(line int, src, tgt string) error { return emit(line, src, tgt) })
	}
	err := tokenizeStream(ctx, scan, 2, opt.Tokenizer, opt.Threads, d, func(first int, ids []int32, lens []int32) error {
		c.allCounts = grow(c.allCounts, len(d.tokens))
		for _, id := range ids {
			c.allCounts[id]++
		}
		for k := 0; k < len(lens); k += 2 {
			ns, nt := int(lens[k]), int(lens[k+1])
			src, tgt := ids[:ns], ids[ns:ns+nt]
			ids = ids[ns+nt:]
			srcWords, tgtWords = srcWords || ns > 0, tgtWords || nt > 0
			c.Report.Total++
			switch {
			case ns == 0 || nt == 0:
				c.Report.EmptySide++
				continue
			case opt.MaxLen > 0 && (ns > opt.MaxLen || nt > opt.MaxLen):
				c.Report.TooLong++
				continue
			}
			if ns > MaxStoredLen || nt > MaxStoredLen {
				return &ParseError{File: files.sideFile(ns > MaxStoredLen), Line: first + k/2, Err: errTooManyTokens(max(ns, nt))}
			}
			if err := b.add(src, tgt); err != nil {
				return err
			}
			if opt.KeepLines {
				c.Lines = append(c.Lines, int32(first+k/2))
			}
			c.srcCounts, c.tgtCounts = grow(c.srcCounts, len(d.tokens)), grow(c.tgtCounts, len(d.tokens))
			for _, id := range src {
				c.srcCounts[id]++
			}
			for _, id := range tgt {
				c.tgtCounts[id]++
			}
		}
		return nil
	})
	if err == nil {
		err = files.checkWords(srcWords, tgtWords)
	}
	if err != nil {
		b.abort()
		return nil, err
	}
	if c.Pairs, err = b.finish(); err != nil {
		return nil, err
	}
	c.tokens = d.tokens
	n := len(c.tokens)
	c.allCounts, c.srcCounts, c.tgtCounts = grow(c.allCounts, n), grow(c.srcCounts, n), grow(c.tgtCounts, n)
	c.Report.Kept = c.Pairs.Len()
	return c, nil
}

// errTooManyTokens is the error of a side of n tokens, more than a Store holds.
func errTooManyTokens(n int) error {
	return fmt.Errorf("a side of %d tokens; a corpus read for training holds at most %d a side (set a length limit, data.max_len)", n, MaxStoredLen)
}

// sideFile names the file that holds the source side (or the target side) of the corpus.
func (c CorpusFiles) sideFile(source bool) string {
	switch {
	case c.TSV != "":
		return c.TSV
	case source:
		return c.Src
	}
	return c.Tgt
}

// grow extends counts with zeros to n entries.
func grow(counts []int64, n int) []int64 {
	if len(counts) >= n {
		return counts
	}
	return append(counts, make([]int64, n-len(counts))...)
}

// Vocabs builds the source and target vocabularies of the pairs kept, as BuildVocab builds them from their
// tokens.
func (c *Corpus) Vocabs(minFreq, maxSize int) (src, tgt *Vocab) {
	return vocabFromCounts(c.tokens, c.srcCounts, minFreq, maxSize), vocabFromCounts(c.tokens, c.tgtCounts, minFreq, maxSize)
}

// WordCounts returns the corpus's distinct tokens and how often each occurs on both sides of every pair read,
// the length filter's dropped pairs included: what LearnBPEProgress learns merges from, as LearnBPE would from
// the tokens of both sides of every pair.
func (c *Corpus) WordCounts() (words []string, counts []int64) { return c.tokens, c.allCounts }

// Counts returns the corpus's distinct tokens and how often each occurs on one side (the target's when target)
// of the pairs kept; a token of the other side only counts 0.
func (c *Corpus) Counts(target bool) (tokens []string, counts []int64) {
	if target {
		return c.tokens, c.tgtCounts
	}
	return c.tokens, c.srcCounts
}

// Unknown is what Encode found: how many tokens each side has in all, and how many of them its vocabulary
// does not hold (encoded as <unk>).
type Unknown struct {
	Src, SrcUnk, Tgt, TgtUnk int64
}

// Encode makes Pairs give the ids of the vocabularies src and tgt (UnkID for a token they lack), as
// EncodeExamples encodes pairs: each dictionary id is mapped as it is read. It may be called once.
func (c *Corpus) Encode(src, tgt *Vocab) Unknown {
	if c.encoded {
		panic("data: Corpus.Encode called twice")
	}
	c.encoded = true
	var u Unknown
	srcMap, tgtMap := make([]int32, len(c.tokens)), make([]int32, len(c.tokens))
	for id, tok := range c.tokens {
		srcMap[id], tgtMap[id] = int32(src.ID(tok)), int32(tgt.ID(tok))
		u.Src += c.srcCounts[id]
		u.Tgt += c.tgtCounts[id]
		if srcMap[id] == UnkID {
			u.SrcUnk += c.srcCounts[id]
		}
		if tgtMap[id] == UnkID {
			u.TgtUnk += c.tgtCounts[id]
		}
	}
	c.Pairs.remap(srcMap, tgtMap)
	return u
}

// SplitOptions control Corpus.Split.
type SplitOptions struct {
	// MaxLen drops the pairs with a side of more than this many subwords (<= 0: no limit).
	MaxLen int
	// Threads split the distinct words in parallel (<= 0: one per CPU).
	Threads int
	// Budget and Dir say where the new corpus keeps its pairs, as ReadOptions does.
	Budget int64
	Dir    string
	// Kept, when set, is called for each pair kept, in order, with its index in the corpus split and the word
	// of each subword of its source side and of its target side (the word's position in its side, as
	// BPE.Split says it): what a caller needs to bring per-pair data in word positions to subword positions.
	// The slices are reused after the call returns.
	Kept func(pair int, srcWordOf, tgtWordOf []int)
}

// Split returns the corpus with its words split into subwords by b, as BPE.ApplyAll splits them, and filtered
// again: a pair with a side of more than opt.MaxLen subwords is dropped. Each distinct word is split once, on
// opt.Threads goroutines. The new corpus keeps its pairs in memory up to opt.Budget bytes and on disk in opt.Dir
// beyond, as ReadOptions says, and the Lines of the pairs it keeps when this one has Lines; this one is left as
// it was (Close it when done). Its WordCounts are still the words'.
func (c *Corpus) Split(ctx context.Context, b *BPE, opt SplitOptions) (*Corpus, error) {
	if c.encoded {
		panic("data: Corpus.Split after Encode")
	}
	maxLen := opt.MaxLen
	pieces := make([][]string, len(c.tokens))
	if err := ParallelFor(ctx, len(c.tokens), opt.Threads, func(i int) {
		pieces[i] = b.Segment(c.tokens[i])
	}); err != nil {
		return nil, err
	}
	d := newDict()
	split := make([][]int32, len(c.tokens)) // the subword ids of each word
	for i, ps := range pieces {
		for _, p := range ps {
			split[i] = append(split[i], d.id(p))
		}
	}
	pieces = nil
	out := &Corpus{Report: c.Report, tokens: d.tokens, allCounts: c.allCounts, srcCounts: make([]int64, len(d.tokens)),
		tgtCounts: make([]int64, len(d.tokens))}
	out.Report.MaxLen = maxLen
	bld := &storeBuilder{budget: opt.Budget, dir: opt.Dir}
	var src, tgt []int32
	var srcWordOf, tgtWordOf []int
	expand := func(dst []int32, wordOf []int, words []int32) ([]int32, []int) {
		dst, wordOf = dst[:0], wordOf[:0]
		for k, w := range words {
			dst = append(dst, split[w]...)
			if opt.Kept != nil {
				for range split[w] {
					wordOf = append(wordOf, k)
				}
			}
		}
		return dst, wordOf
	}
	err := c.Pairs.Each(func(i int, srcWords, tgtWords []int32) error {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		src, srcWordOf = expand(src, srcWordOf, srcWords)
		tgt, tgtWordOf = expand(tgt, tgtWordOf, tgtWords)
		if maxLen > 0 && (len(src) > maxLen || len(tgt) > maxLen) {
			out.Report.TooLong++
			return nil
		}
		if len(src) > MaxStoredLen || len(tgt) > MaxStoredLen {
			return fmt.Errorf("data: pair %d of the corpus: %w", i+1, errTooManyTokens(max(len(src), len(tgt))))
		}
		if err := bld.add(src, tgt); err != nil {
			return err
		}
		if c.Lines != nil {
			out.Lines = append(out.Lines, c.Lines[i])
		}
		if opt.Kept != nil {
			opt.Kept(i, srcWordOf, tgtWordOf)
		}
		for _, id := range src {
			out.srcCounts[id]++
		}
		for _, id := range tgt {
			out.tgtCounts[id]++
		}
		return nil
	})
	if err != nil {
		bld.abort()
		return nil, err
	}
	if out.Pairs, err = bld.finish(); err != nil {
		return nil, err
	}
	out.Report.Kept = out.Pairs.Len()
	return out, nil
}

// WordCounts reads text files (.gz decompressed), tokenizes every line on threads goroutines (<= 0: one per
// CPU) and returns the distinct tokens with how often each occurs: what LearnBPEProgress learns merges from, the
// same whatever the number of threads. Errors name the file and the line, as ReadLines's do. progress, when
// set, is told the bytes read so far.
func WordCounts(ctx context.Context, paths []string, tok Tokenizer, threads int, progress func(read int64)) (words []string, counts []int64, err error) {
	d := newDict()
	var done int64 // bytes of the files before the current one
	for _, path := range paths {
		scan := func(emit func(line int, texts ...string) error) error {
			var read func(int64)
			if progress != nil {
				read = func(n int64) { progress(done + n) }
			}
			n, err := scanFile(path, read, func(line int, text string) error { return emit(line, text) })
			done += n
			return err
		}
		err := tokenizeStream(ctx, scan, 1, tok, threads, d, func(_ int, ids, _ []int32) error {
			counts = grow(counts, len(d.tokens))
			for _, id := range ids {
				counts[id]++
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return d.tokens, grow(counts, len(d.tokens)), nil
}

// dict numbers distinct tokens in the order they are first given.
type dict struct {
	ids    map[string]int32
	tokens []string
}

func newDict() *dict { return &dict{ids: map[string]int32{}} }

// id returns tok's number, giving it the next one if it is new. The dictionary keeps its own copy of tok.
func (d *dict) id(tok string) int32 {
	if id, ok := d.ids[tok]; ok {
		return id
	}
	if len(d.tokens) == math.MaxInt32 {
		panic("data: more than 2³¹ distinct tokens")
	}
	id := int32(len(d.tokens))
	tok = strings.Clone(tok)
	d.ids[tok] = id
	d.tokens = append(d.tokens, tok)
	return id
}

// tokenAppender is a Tokenizer that can append tokens to a slice (RegexTokenizer.AppendTokens).
type tokenAppender interface {
	AppendTokens(dst []string, line string) []string
}

// streamChunk is a block of records on their way through tokenizeStream: width texts a record.
type streamChunk struct {
	first  int      // line number of the first record
	texts  []string // width a record
	ids    []int32  // the tokens of every text, in order, as ids of the worker's own dictionary
	lens   []int32  // tokens of each text
	worker int      // whose dictionary ids holds
	tokens []string // that dictionary's tokens when the chunk was done (the worker appends past them later)
	done   chan struct{}
}

// chunkRecords is how many records a worker tokenizes at a time.
const chunkRecords = 2048

// tokenizeStream tokenizes the records scan emits (width texts each) on threads goroutines and hands them to
// fn block by block, in order, as ids of d: the ids of the tokens of every text of the block, one text after
// the other, and the number of tokens of each text; first is the line number of the block's first record. Each
// goroutine numbers tokens in a dictionary of its own, and the ids of d are given in the order the tokens first
// appear in the stream, so the result does not depend on the number of goroutines. ctx stops the scan between
// blocks; fn's error and scan's stop it too and are returned.
func tokenizeStream(ctx context.Context, scan func(emit func(line int, texts ...string) error) error, width int,
	tok Tokenizer, threads int, d *dict, fn func(first int, ids, lens []int32) error) error {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	work := make(chan *streamChunk, threads)
	order := make(chan *streamChunk, 2*threads+2)
	stop := make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop) })
	defer halt()

	var wg sync.WaitGroup
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := newDict() // this worker's own: only it writes to it
			appender, fast := tok.(tokenAppender)
			var toks []string
			for c := range work {
				c.worker = w
				c.ids, c.lens = make([]int32, 0, 8*len(c.texts)), make([]int32, 0, len(c.texts))
				for _, text := range c.texts {
					if fast {
						toks = appender.AppendTokens(toks[:0], text)
					} else {
						toks = append(toks[:0], tok.Tokenize(text)...)
					}
					for _, t := range toks {
						c.ids = append(c.ids, l.id(t))
					}
					c.lens = append(c.lens, int32(len(toks)))
				}
				c.texts = nil
				c.tokens = l.tokens
				close(c.done)
			}
		}()
	}

	var scanErr error
	errStopped := errors.New("stopped")
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(order)
		defer close(work)
		c := &streamChunk{first: 1, done: make(chan struct{})}
		send := func() bool {
			select {
			case order <- c:
			case <-stop:
				return false
			}
			select {
			case work <- c:
			case <-stop:
				return false
			}
			return true
		}
		scanErr = scan(func(line int, texts ...string) error {
			if len(c.texts) == 0 {
				c.first = line
			}
			c.texts = append(c.texts, texts...)
			if len(c.texts) < chunkRecords*width {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if !send() {
				return errStopped
			}
			c = &streamChunk{done: make(chan struct{})}
			return nil
		})
		if scanErr == errStopped {
			scanErr = nil
		}
		if scanErr == nil && len(c.texts) > 0 {
			send()
		}
	}()

	toGlobal := make([][]int32, threads) // each worker's ids as ids of d (-1: not yet given)
	var err error
	for c := range order {
		if err != nil {
			continue // drain, so that the scan ends
		}
		<-c.done
		m := toGlobal[c.worker]
		for i, id := range c.ids {
			for len(m) <= int(id) {
				m = append(m, -1)
			}
			if m[id] < 0 {
				m[id] = d.id(c.tokens[id])
			}
			c.ids[i] = m[id]
		}
		toGlobal[c.worker] = m
		if err = fn(c.first, c.ids, c.lens); err == nil {
			err = ctx.Err()
		}
		if err != nil {
			halt() // the scan stops at its next block
		}
	}
	<-scanned
	wg.Wait()
	if err != nil {
		return err
	}
	return scanErr
}

// ParallelFor calls fn on every i in [0, n), a block of 1024 at a time, on threads goroutines (<= 0: one per
// CPU), and returns ctx's error if it was cancelled meanwhile (some blocks may then not have run). The order of
// the calls is not fixed: fn must only write what belongs to i.
func ParallelFor(ctx context.Context, n, threads int, fn func(i int)) error {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	const part = 1024
	next := make(chan int)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range next {
				for i := lo; i < min(lo+part, n); i++ {
					fn(i)
				}
			}
		}()
	}
	var err error
	for lo := 0; lo < n; lo += part {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- lo
	}
	close(next)
	wg.Wait()
	return err
}
