package app

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
)

// readGuide reads the links of guided alignment (train.guided_alignment) from path, a Pharaoh file of 0-based
// links line-aligned with the training corpus, read with ReadOptions.KeepLines: a file with another number of
// lines than the corpus, or a link beyond the tokens of its pair, is an error naming the file and the line.
// It returns the links of each pair the corpus kept, by its index (data.Batch.Index).
func readGuide(path string, corpus *data.Corpus) (func(i int) []align.Link, error) {
	f, err := data.Open(path)
	if err != nil {
		return nil, fmt.Errorf("train.guided_alignment: %w", err)
	}
	defer f.Close()
	gold, err := align.ReadPharaoh(f, path, false)
	if err != nil {
		return nil, fmt.Errorf("train.guided_alignment: %w", err)
	}
	if len(gold) != corpus.Report.Total {
		return nil, fmt.Errorf("train.guided_alignment: %s has %d lines and the training corpus %d; want one line of links per sentence pair",
			path, len(gold), corpus.Report.Total)
	}
	if len(corpus.Lines) != corpus.Pairs.Len() {
		panic(fmt.Sprintf("app: a corpus of %d pairs with %d lines: read it with KeepLines", corpus.Pairs.Len(), len(corpus.Lines)))
	}
	// The pairs dropped (empty sides, longer than data.max_len) are not checked: their links are never read.
	srcLens, tgtLens := make([]int, len(gold)), make([]int, len(gold))
	for k := range gold {
		srcLens[k], tgtLens[k] = math.MaxInt, math.MaxInt
	}
	links := make([][]align.Link, corpus.Pairs.Len())
	for i, line := range corpus.Lines {
		srcLens[line-1], tgtLens[line-1] = corpus.Pairs.Lens(i)
		links[i] = gold[line-1]
	}
	if err := align.CheckLengths(gold, srcLens, tgtLens, path, false); err != nil {
		return nil, fmt.Errorf("train.guided_alignment: %w (the links must count the tokens attend reads, as attend align --statistical writes them)", err)
	}
	return func(i int) []align.Link { return links[i] }, nil
}
