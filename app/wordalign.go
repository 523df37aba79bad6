package app

import (
	"context"
	"io"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/wordalign"
)

// StatisticalAlignRequest is everything `attend align --statistical` needs: no model, the corpus alone.
type StatisticalAlignRequest struct {
	Corpus Corpus
	// Tokenizer splits the corpus's lines into the words whose positions the links give: attend's regex
	// tokenizer, or data.WhitespaceTokenizer for pre-tokenized text.
	Tokenizer data.Tokenizer
	Options   wordalign.Options
	Sym       align.Symmetrization // align.Forward or align.Reverse for one direction alone
	Output    io.Writer
	Gold      [][]align.Link // gold links of the first lines, one entry per line, or nil
	GoldName  string         // the gold file, for messages
	// OneBasedGold says the gold file's positions count from 1, for messages quoting its links.
	OneBasedGold bool
}

// AlignStatistical trains req.Options' model on the corpus in the directions req.Sym needs (package wordalign),
// writes the symmetrized links of every sentence pair, one Pharaoh line each, and, with gold links, returns the
// scores against them. The gold may cover only the first lines of the corpus, the sentences to align put before
// the parallel text that helps to align them; more gold lines than sentence pairs are an error.
func AlignStatistical(ctx context.Context, req StatisticalAlignRequest) (align.Scores, error) {
	pairs, err := req.Corpus.Read(req.Tokenizer)
	if err != nil {
		return align.Scores{}, err
	}
	if err := checkGold(req.Gold, pairs, req.Corpus, req.GoldName, req.OneBasedGold); err != nil {
		return align.Scores{}, err
	}
	links, err := wordalign.AlignWords(ctx, pairs, req.Options, req.Sym)
	if err != nil {
		return align.Scores{}, err
	}
	return writeLinks(req.Output, links.Symmetrized(req.Sym), req.Gold, nil)
}
