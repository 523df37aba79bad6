package app

import (
	"fmt"
	"io"

	"github.com/attend-nmt/attend/model"
)

// LengthLimit is the longest sentence, in tokens, that align, eval --perplexity and heatmap score or draw
// when no --max-len is given: the larger of the model's training limit (data.max_len) and its translation
// limit (decode.max_len). A pair scored by teacher forcing costs memory in the product of its two lengths (a
// pair of 20,000-word lines asked for gigabytes), so longer pairs are skipped with a warning (LongPairs).
func LengthLimit(cfg model.Config) int { return max(cfg.Data.MaxLen, cfg.Decode.MaxLen) }

// LongPair is a sentence pair with a side longer than a length limit: its line (from 1) and its two lengths
// (the target's 0 when there is none).
type LongPair struct{ Line, SrcLen, TgtLen int }

// maxLongWarnings is how many skipped pairs WarnLongPairs names one by one before it only counts them.
const maxLongWarnings = 5

// LongPairs returns the pairs of srcs and tgts (tgts may be nil: sources alone) with a side longer than limit
// tokens, in order; limit <= 0 finds none.
func LongPairs(srcs, tgts [][]string, limit int) []LongPair {
	var long []LongPair
	for i, s := range srcs {
		var t []string
		if tgts != nil {
			t = tgts[i]
		}
		if limit > 0 && (len(s) > limit || len(t) > limit) {
			long = append(long, LongPair{Line: i + 1, SrcLen: len(s), TgtLen: len(t)})
		}
	}
	return long
}

// WarnLongPairs writes to w a warning naming each skipped pair's files and line (the first few, then a count):
// "warning: test.de and test.en line 3: 20000 and 19000 tokens, more than the length limit 80 (--max-len); skipped".
// files names the source file, or the source and target files.
func WarnLongPairs(w io.Writer, long []LongPair, limit int, files string, what string) {
	if w == nil {
		return
	}
	for k, p := range long {
		if k == maxLongWarnings {
			fmt.Fprintf(w, "warning: %d more pairs of %s longer than %d tokens %s\n", len(long)-k, files, limit, what)
			return
		}
		lengths := fmt.Sprintf("%d tokens", p.SrcLen)
		if p.TgtLen > 0 {
			lengths = fmt.Sprintf("%d and %d tokens", p.SrcLen, p.TgtLen)
		}
		fmt.Fprintf(w, "warning: %s line %d: %s, more than the length limit %d (--max-len); %s\n", files, p.Line, lengths, limit, what)
	}
}
