package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
)

// AverageProgress loads the checkpoints at paths and returns one whose weights are their element-wise mean, as
// OpenNMT-py's average_models does: averaging the last few checkpoints of a run usually scores better than any
// one of them. Every checkpoint must have the same architecture (model.* keys but dropout), vocabularies and
// subword merges; the result takes the configuration, optimizer state and position of the last one, so training
// resumed from it continues from there. progress, when set, is told the number of checkpoints added in, after
// each one.
func AverageProgress(paths []string, progress func(added int)) (*Checkpoint, error) {
	if len(paths) == 0 {
		return nil, errors.New("average: no checkpoints given")
	}
	var sum []float64
	var last *Checkpoint
	for i, path := range paths {
		ck, err := Load(path)
		if err != nil {
			return nil, fmt.Errorf("average: %w", err)
		}
		if last != nil {
			if err := sameModel(last, ck); err != nil {
				return nil, fmt.Errorf("average: %s and %s: %w", paths[i-1], path, err)
			}
		}
		w := ck.Model.Params.Flat()
		if sum == nil {
			sum = make([]float64, len(w))
		}
		for j, x := range w {
			sum[j] += float64(x)
		}
		last = ck
		if progress != nil {
			progress(i + 1)
		}
	}
	w := last.Model.Params.Flat()
	for j := range w {
		w[j] = float32(sum[j] / float64(len(paths)))
	}
	return last, nil
}

// sameModel reports, as an error naming the difference, whether two checkpoints differ in their model
// configuration or vocabularies.
func sameModel(a, b *Checkpoint) error {
	var differ []string
	for _, c := range Diff(a.Config, b.Config) {
		if strings.HasPrefix(c.Key, "model.") && c.Key != "model.dropout" {
			differ = append(differ, c.String())
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("different models: %s", strings.Join(differ, ", "))
	}
	return sameVocabularies(a.Model, b.Model)
}

// sameVocabularies reports, as an error naming the first difference, whether two models differ in their source
// or target vocabularies or their subword merges.
func sameVocabularies(a, b *Seq2Seq[float32]) error {
	if d := vocabDiff(a.SrcVocab, b.SrcVocab); d != "" {
		return fmt.Errorf("different source vocabularies (%s)", d)
	}
	if d := vocabDiff(a.TgtVocab, b.TgtVocab); d != "" {
		return fmt.Errorf("different target vocabularies (%s)", d)
	}
	if (a.Subwords == nil) != (b.Subwords == nil) || a.Subwords != nil && !slices.Equal(a.Subwords.Merges, b.Subwords.Merges) {
		first := ""
		if a.Subwords != nil && b.Subwords != nil {
			for i := range min(len(a.Subwords.Merges), len(b.Subwords.Merges)) {
				if x, y := a.Subwords.Merges[i], b.Subwords.Merges[i]; x != y {
					first = fmt.Sprintf("; merge %d is %s+%s and %s+%s", i+1, x[0], x[1], y[0], y[1])
					break
				}
			}
		}
		return fmt.Errorf("different subword merges (%s, %s%s)", describeSubwords(a.Subwords), describeSubwords(b.Subwords), first)
	}
	return nil
}

// vocabDiff describes how vocabulary b differs from a: their sizes and the first id whose token differs; "" when
// they hold the same tokens in the same order.
func vocabDiff(a, b *data.Vocab) string {
	at, bt := a.Tokens(), b.Tokens()
	for i := range min(len(at), len(bt)) {
		if at[i] != bt[i] {
			return fmt.Sprintf("%s and %s, the first difference at id %d: %q and %q", plural.Count(len(at), "token"), plural.Count(len(bt), "token"), i, at[i], bt[i])
		}
	}
	if len(at) != len(bt) {
		return fmt.Sprintf("%s and %s, the same up to the shorter's end", plural.Count(len(at), "token"), plural.Count(len(bt), "token"))
	}
	return ""
}
