package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Average loads the checkpoints at paths and returns one whose weights are their element-wise mean, as
// OpenNMT-py's average_models does: averaging the last few checkpoints of a run usually scores better than any
// one of them. Every checkpoint must have the same architecture (model.* keys but dropout), vocabularies and subword
// merges; the result takes the
// configuration, optimizer state and position of the last one, so training resumed from it continues from there.
func Average(paths []string) (*Checkpoint, error) { return AverageProgress(paths, nil) }

// AverageProgress is Average telling progress, when set, the number of checkpoints added in, after each one.
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
	if !slices.Equal(a.Model.SrcVocab.Tokens(), b.Model.SrcVocab.Tokens()) {
		return errors.New("different source vocabularies")
	}
	if !slices.Equal(a.Model.TgtVocab.Tokens(), b.Model.TgtVocab.Tokens()) {
		return errors.New("different target vocabularies")
	}
	if (a.Model.Subwords == nil) != (b.Model.Subwords == nil) || a.Model.Subwords != nil && !slices.Equal(a.Model.Subwords.Merges, b.Model.Subwords.Merges) {
		return fmt.Errorf("different subword merges (%s, %s)", describeSubwords(a.Model.Subwords), describeSubwords(b.Model.Subwords))
	}
	return nil
}
