package app

import (
	"context"
	"fmt"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// LearnLexicon gives a loaded model the lexicon attend train would have learned for it: it reads corpus as
// training does (the model's tokenizer, its subword merges, the length filter of data.max_len) and estimates
// each source word's likely translations (lexicon.Learn). It returns the number of sentence pairs used. A corpus
// the wrong way round for the model (its source side in the model's target language) is an error.
func LearnLexicon(ctx context.Context, ck *model.Checkpoint, corpus Corpus) (int, error) {
	var pairs []data.Pair
	if err := interruptible(ctx, "reading the corpus", func() (err error) {
		pairs, err = corpus.Read(ck.Config.Data.Tokenizer())
		return err
	}); err != nil {
		return 0, err
	}
	m := ck.Model
	if m.Subwords != nil {
		pairs = SplitPairs(m.Subwords, pairs)
	}
	pairs, _ = data.Filter(pairs, ck.Config.Data.MaxLen)
	if len(pairs) == 0 {
		return 0, fmt.Errorf("lexicon: no sentence pairs of %s left after the length filter (data.max_len %d)", corpus, ck.Config.Data.MaxLen)
	}
	if err := checkDirection(corpus, m.SrcVocab, m.TgtVocab, pairs); err != nil {
		return 0, fmt.Errorf("lexicon: %w", err)
	}
	ex := data.EncodeExamples(pairs, m.SrcVocab, m.TgtVocab)
	if err := learnLexicon(ctx, m, ex); err != nil {
		return 0, err
	}
	return len(ex), nil
}

// learnLexicon sets m.Lexicon to the table lexicon.Learn estimates from the encoded examples, unless ctx is
// cancelled first; the model is only changed once learning has finished.
func learnLexicon(ctx context.Context, m *model.Seq2Seq[float32], ex []data.Example) error {
	var lex *lexicon.Table
	if err := interruptible(ctx, "learning the lexicon", func() (err error) {
		lex, err = lexicon.Learn(ex, m.SrcVocab.Size(), m.TgtVocab.Size(), lexicon.DefaultOptions())
		return err
	}); err != nil {
		return err
	}
	m.Lexicon = lex
	return nil
}
