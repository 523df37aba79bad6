package model

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/attend-nmt/attend/internal/plural"
)

// Change is one config key whose value differs between two configurations.
type Change struct {
	Key      string // section.key, as in YAML and --set
	Old, New any
}

// String is "train.lr 0.001 → 0.0005".
func (c Change) String() string { return fmt.Sprintf("%s %v → %v", c.Key, c.Old, c.New) }

// Diff lists the keys whose values differ from old to new, in the order of the Config struct.
func Diff(old, new Config) []Change {
	for _, c := range []*Config{&old, &new} {
		if c.Data.Subword == "" {
			c.Data.Subword = SubwordNone // the same setting, spelled two ways
		}
		if c.Model.Type == "" {
			c.Model.Type = TypeRNN
		}
		if !c.Model.IsTransformer() { // a recurrent model does not read the Transformer's keys (checkpoints from before them have zeros)
			def := Default().Model
			c.Model.DModel, c.Model.FF, c.Model.Positions, c.Model.MaxPositions = def.DModel, def.FF, def.Positions, def.MaxPositions
			c.Model.TiedEmbeddings, c.Model.AttentionLayer, c.Model.AlignmentHead = def.TiedEmbeddings, def.AttentionLayer, def.AlignmentHead
		}
	}
	var out []Change
	for _, k := range Keys() {
		a, _ := keyValue(reflect.ValueOf(old), k.Name)
		b, _ := keyValue(reflect.ValueOf(new), k.Name)
		if a.Interface() != b.Interface() {
			out = append(out, Change{Key: k.Name, Old: a.Interface(), New: b.Interface()})
		}
	}
	return out
}

// fixedOnResume reports whether key shapes the model or its vocabularies, which a checkpoint fixes for good.
func fixedOnResume(key string) bool {
	switch key {
	case "data.lowercase", "data.min_freq", "data.max_vocab", "data.subword", "data.merges":
		return true
	}
	return strings.HasPrefix(key, "model.")
}

// batchShaping reports whether key decides which sentences make up each batch of an epoch, so that a change
// in the middle of an epoch would skip some sentences and repeat others.
func batchShaping(key string) bool {
	switch key {
	case "data.batch", "data.batch_tokens", "data.bucket_chunk", "data.round_len", "data.max_len", "train.seed":
		return true
	}
	return false
}

// CheckResume decides whether a run that stopped at prog under the stored configuration may continue under
// wanted, and returns the keys that change. Architecture and vocabulary keys (model.*, data.lowercase,
// data.min_freq, data.max_vocab, data.subword, data.merges) may not change at all; keys that shape the batches (data.batch,
// data.batch_tokens, data.bucket_chunk, data.round_len, data.max_len, train.seed) only at an epoch boundary; every other key
// (train.lr, train.epochs, train.clip, …) takes effect. A run that has nothing left to do is refused as well.
// The error names every refused key with its stored and wanted value.
func CheckResume(stored, wanted Config, prog Progress) ([]Change, error) {
	changes := Diff(stored, wanted)
	var errs []error
	for _, c := range changes {
		switch {
		case fixedOnResume(c.Key):
			errs = append(errs, fmt.Errorf("%s is %v in the checkpoint, %v now: the model and its vocabularies are fixed once trained (start a new run to change it)", c.Key, c.Old, c.New))
		case batchShaping(c.Key) && prog.Batch > 0:
			errs = append(errs, fmt.Errorf("%s is %v in the checkpoint, %v now: it decides the batches, and the checkpoint stopped within epoch %d (batch %d); change it only when resuming from an epoch boundary", c.Key, c.Old, c.New, prog.Epoch+1, prog.Batch))
		}
	}
	t := wanted.Train
	switch {
	case prog.Epoch >= t.Epochs && !prog.ValidPending:
		errs = append(errs, fmt.Errorf("train.epochs is %d but the checkpoint has completed %s: nothing left to do (raise --epochs)", t.Epochs, plural.Count(prog.Epoch, "epoch")))
	case t.MaxSteps > 0 && prog.Step >= t.MaxSteps && !prog.ValidPending:
		errs = append(errs, fmt.Errorf("train.max_steps is %d but the checkpoint is at step %d: nothing left to do (raise --max-steps)", t.MaxSteps, prog.Step))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cannot resume: %w", err)
	}
	return changes, nil
}
