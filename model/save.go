package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model/checkpoint"
	"github.com/attend-nmt/attend/param"
)

// Progress is where a training run stands: enough, with the seed, to rebuild the same batches and dropout masks
// and continue exactly where it stopped.
type Progress struct {
	Epoch         int      `json:"epoch"`           // epoch in progress, from 0
	Batch         int      `json:"batch"`           // batches of that epoch already trained on
	Step          int      `json:"step"`            // optimizer steps in all
	ElapsedS      float64  `json:"elapsed_s"`       // training seconds in all
	BestValidLoss *float64 `json:"best_valid_loss"` // nil before the first validation
	// BestValidBLEU is the best validation BLEU so far (train.valid_bleu), nil before the first.
	BestValidBLEU *float64 `json:"best_valid_bleu,omitempty"`
	// ValidPending is set when an epoch ended but its validation was interrupted: a resumed run validates first.
	ValidPending bool `json:"valid_pending,omitempty"`
	// BadValidations counts the validations in a row that did not improve on the best (train.patience).
	BadValidations int `json:"bad_validations,omitempty"`
	// LRScale is the product of the learning-rate decays earned on validation plateaus (train.lr_decay); 0 in
	// checkpoints written before it existed, meaning 1.
	LRScale float64 `json:"lr_scale,omitempty"`
	// ValidFiles names the validation corpus the run validates on (absolute paths), so that a resumed run keeps
	// validating on it; empty for a run without validation, and in checkpoints written before it existed.
	ValidFiles CorpusFiles `json:"valid_files,omitzero"`
	// GuideFile names the file of the statistical aligner's links that train.guided_alignment auto wrote for
	// the run (an absolute path), and GuideSHA256 is its SHA-256 (hex) when it was last read or written, so
	// that a resumed run reads the links instead of aligning the corpus again; both are empty otherwise.
	GuideFile   string `json:"guide_file,omitempty"`
	GuideSHA256 string `json:"guide_sha256,omitempty"`
	// Arithmetic says how the run's sums were computed (the BLAS, the elementwise kernels, the products on AMX
	// and the number of workers: what makes two builds or machines round differently), so that a run resumed
	// with other arithmetic can say that it will not repeat an uninterrupted run bit for bit; empty in
	// checkpoints written before it existed.
	Arithmetic string `json:"arithmetic,omitempty"`
}

// CorpusFiles names the files of a parallel corpus, as a checkpoint stores them.
type CorpusFiles = data.CorpusFiles

// header is the JSON metadata of a checkpoint.
type header struct {
	Format   string   `json:"format"`
	Dtype    string   `json:"dtype"`
	Config   Config   `json:"config"`
	SrcVocab []string `json:"src_vocab"`
	TgtVocab []string `json:"tgt_vocab"`
	// BPEMerges are the model's subword merges in the order learned (data.subword bpe; "</w>" marks a word's
	// last symbol, as in data.BPE), absent or null for a model of words and in checkpoints written before
	// subwords existed.
	BPEMerges [][2]string `json:"bpe_merges"`
	// Lexicon is Seq2Seq.Lexicon: for each source id, its most probable target ids; absent in checkpoints
	// written before it existed.
	Lexicon  [][]int32 `json:"lexicon,omitempty"`
	Progress Progress  `json:"progress"`
	AdamStep int       `json:"adam_step"`
}

const formatName = "attend-seq2seq"

// Checkpoint is a loaded checkpoint: the model, the optimizer state and the training position.
type Checkpoint struct {
	Config   Config
	Model    *Seq2Seq[float32]
	Adam     *Adam[float32]
	Progress Progress
	// Notes say which keys of the stored config, replaced since, were read as their replacements
	// (replacedPrecision), one sentence each, for a warning when the run resumes.
	Notes []string
}

// BestPath is where the checkpoint with the best validation loss goes, beside the last one at path.
func BestPath(path string) string { return strings.TrimSuffix(path, ".ckpt") + ".best.ckpt" }

// LockPath is the lock file that a training run writing the checkpoint at path holds (checkpoint.TryLock),
// beside it: NAME.lock for NAME.ckpt.
func LockPath(path string) string { return strings.TrimSuffix(path, ".ckpt") + ".lock" }

// Save writes the model, optimizer state and progress to path atomically. It refuses, writing nothing, when a
// weight or an optimizer moment is not finite, so a checkpoint never holds NaN or Inf.
func Save(path string, cfg Config, m *Seq2Seq[float32], opt *Adam[float32], prog Progress) error {
	f := &checkpoint.File{}
	for k, set := range [3]*param.Set[float32]{m.Params, opt.M, opt.V} {
		prefix := setPrefixes()[k]
		if name, i, ok := firstNonFinite(set); ok {
			return fmt.Errorf("save %s: %s%s[%d] is not finite; checkpoint not written", path, prefix, name, i)
		}
		for _, t := range set.List() {
			f.Tensors = append(f.Tensors, checkpoint.Tensor{Name: prefix + t.Name, Shape: t.Shape, F32: t.Data})
		}
	}
	if (m.Subwords != nil) != (cfg.Data.Subword == SubwordBPE) {
		return fmt.Errorf("save %s: data.subword is %s but the model has %s", path, cfg.Data.Subword, describeSubwords(m.Subwords))
	}
	h := header{Format: formatName, Dtype: "float32", Config: cfg, SrcVocab: m.SrcVocab.Tokens(), TgtVocab: m.TgtVocab.Tokens(),
		Progress: prog, AdamStep: opt.Steps}
	if m.Subwords != nil {
		h.BPEMerges = m.Subwords.Merges
		if h.BPEMerges == nil {
			h.BPEMerges = [][2]string{} // learned none (a tiny corpus): stored as [], still a subword model
		}
	}
	if m.Lexicon != nil {
		h.Lexicon = m.Lexicon.Best
	}
	var err error
	if f.Header, err = json.Marshal(h); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return checkpoint.Write(path, f)
}

// setPrefixes are the prefixes of the names of a checkpoint's tensors: the weights', then those of Adam's first
// and second moments.
func setPrefixes() [3]string { return [3]string{"", "adam.m.", "adam.v."} }

// Load reads a checkpoint written by Save. A weight or an optimizer moment that is not finite (NaN, ±Inf) is an
// error naming the tensor, as Save refuses to write one.
func Load(path string) (*Checkpoint, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	var h header
	if err := json.Unmarshal(f.Header, &h); err != nil {
		return nil, fmt.Errorf("load %s: header: %w", path, err)
	}
	if h.Format != formatName || h.Dtype != "float32" {
		return nil, fmt.Errorf("load %s: not an attend float32 model (format %q, dtype %q)", path, h.Format, h.Dtype)
	}
	var notes []string
	var old struct {
		Config struct{ Train struct{ BF16, BF16x3 *bool } }
	} // before train.precision
	_ = json.Unmarshal(f.Header, &old) // the header decoded above
	if t := old.Config.Train; h.Config.Train.Precision == "" && (t.BF16 != nil || t.BF16x3 != nil) {
		var note string
		h.Config.Train.Precision, note = replacedPrecision(t.BF16, t.BF16x3)
		notes = append(notes, "stored config: "+note)
	}
	if err := h.Config.Validate(); err != nil {
		return nil, fmt.Errorf("load %s: stored config: %w", path, err)
	}
	if err := h.validatePosition(); err != nil {
		return nil, fmt.Errorf("load %s: stored position: %w", path, err)
	}
	src, err := data.NewVocab(h.SrcVocab)
	if err != nil {
		return nil, fmt.Errorf("load %s: source vocabulary: %w", path, err)
	}
	tgt, err := data.NewVocab(h.TgtVocab)
	if err != nil {
		return nil, fmt.Errorf("load %s: target vocabulary: %w", path, err)
	}
	subwords, err := h.subwords()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	lex, err := h.checkTables(f, src, tgt)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	m, err := New[float32](h.Config.Model, src, tgt)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	m.Subwords, m.Lexicon = subwords, lex
	opt := NewAdam(m.Params, h.Config.Train.LR)
	opt.Steps = h.AdamStep
	for k, set := range [3]*param.Set[float32]{m.Params, opt.M, opt.V} {
		prefix := setPrefixes()[k]
		for _, t := range set.List() {
			stored, _ := f.Tensor(prefix + t.Name) // there, of t's shape: checkTables
			if len(stored.F32) != len(t.Data) {
				return nil, fmt.Errorf("load %s: tensor %s holds %d float32 values, want %d", path, prefix+t.Name, len(stored.F32), len(t.Data))
			}
			copy(t.Data, stored.F32)
		}
		// Save refuses non-finite values, so these come from a file written otherwise (or crafted, with a valid
		// checksum): a NaN weight makes every translation <pad> and beam search index out of range.
		if name, i, ok := firstNonFinite(set); ok {
			return nil, fmt.Errorf("load %s: tensor %s%s holds %g at index %d; a checkpoint's weights and optimizer moments must be finite",
				path, prefix, name, set.Get(name).Data[i], i)
		}
	}
	return &Checkpoint{Config: h.Config, Model: m, Adam: opt, Progress: h.Progress, Notes: notes}, nil
}

// ReadProgress returns the training position stored in the checkpoint at path, from its header alone
// (checkpoint.ReadHeader: neither the weights nor the checksum are read): a quick look at whose a file is.
func ReadProgress(path string) (Progress, error) {
	raw, err := checkpoint.ReadHeader(path)
	if err != nil {
		return Progress{}, err
	}
	var h struct {
		Format   string   `json:"format"`
		Progress Progress `json:"progress"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return Progress{}, fmt.Errorf("load %s: header: %w", path, err)
	}
	if h.Format != formatName {
		return Progress{}, fmt.Errorf("load %s: not an attend model (format %q)", path, h.Format)
	}
	return h.Progress, nil
}

// checkTables checks, in one place and before anything is allocated for them, every table of the checkpoint
// f whose size the config and the vocabularies src and tgt imply: the tensors (the embeddings, the output
// layer, every weight, and Adam's two moments of each: present, each of the shape its config implies, and
// nothing else) and the lexicon (lexicon.Table.Check: one row per source word, each of at most
// lexicon.DefaultOptions().Keep distinct target ids in the vocabulary). The subword merges are checked
// against the config by subwords. It returns the lexicon (nil when the file holds none). The checksum protects
// against corruption, not against a crafted header asking for huge sizes or a table of another shape.
func (h header) checkTables(f *checkpoint.File, src, tgt *data.Vocab) (*lexicon.Table, error) {
	var lex *lexicon.Table
	if h.Lexicon != nil {
		lex = &lexicon.Table{Best: h.Lexicon}
		if err := lex.Check(src.Size(), tgt.Size()); err != nil {
			return nil, err
		}
		keep := lexicon.DefaultOptions().Keep
		for s, row := range lex.Best {
			if len(row) > keep {
				return nil, fmt.Errorf("lexicon: row %d holds %d target ids, more than the %d a lexicon keeps", s, len(row), keep)
			}
		}
	}
	implied, err := newModel[float32](h.Config.Model, src, tgt, param.NewShapeSet[float32](), nil)
	if err != nil {
		return nil, err
	}
	for _, prefix := range setPrefixes() {
		for _, t := range implied.Params.List() {
			stored, ok := f.Tensor(prefix + t.Name)
			if !ok {
				return nil, fmt.Errorf("tensor %s missing", prefix+t.Name)
			}
			if !slices.Equal(stored.Shape, t.Shape) {
				return nil, fmt.Errorf("tensor %s has shape %v, the config implies %v", prefix+t.Name, stored.Shape, t.Shape)
			}
		}
	}
	if want := 3 * len(implied.Params.List()); len(f.Tensors) != want {
		return nil, fmt.Errorf("file holds %d tensors, the config implies %d", len(f.Tensors), want)
	}
	return lex, nil
}

// subwords returns the stored merges, checked against data.subword and data.merges: present exactly when the
// config says bpe (possibly empty: a tiny corpus may offer no pair to merge), at most data.merges of them, each
// two non-empty symbols without white space, as a merges file holds them.
func (h header) subwords() (*data.BPE, error) {
	d := h.Config.Data
	switch {
	case d.Subword != SubwordBPE && h.BPEMerges != nil:
		return nil, fmt.Errorf("bpe_merges holds %d merges but data.subword is %s", len(h.BPEMerges), d.Subword)
	case d.Subword != SubwordBPE:
		return nil, nil
	case h.BPEMerges == nil:
		return nil, fmt.Errorf("data.subword is bpe but the checkpoint holds no bpe_merges")
	case len(h.BPEMerges) > d.Merges:
		return nil, fmt.Errorf("bpe_merges holds %d merges, more than data.merges %d", len(h.BPEMerges), d.Merges)
	}
	for i, m := range h.BPEMerges {
		for _, sym := range m {
			if sym == "" || strings.ContainsFunc(sym, unicode.IsSpace) {
				return nil, fmt.Errorf("bpe_merges[%d] is %q: want two non-empty symbols without white space", i, m)
			}
		}
	}
	return &data.BPE{Merges: h.BPEMerges}, nil
}

// describeSubwords says what a model splits words with, for messages.
func describeSubwords(b *data.BPE) string {
	if b == nil {
		return "no subword merges"
	}
	return fmt.Sprintf("%d BPE merges", len(b.Merges))
}

// validatePosition checks the training position a run would resume from: counts that are negative would index
// batches before the first (a panic) or give Adam a bias correction of 0 (infinite steps), and a learning-rate
// scale outside [0, 1] would train at a rate no decay can give.
func (h header) validatePosition() error {
	var errs []error
	for _, c := range []struct {
		key   string
		value int
	}{{"progress.epoch", h.Progress.Epoch}, {"progress.batch", h.Progress.Batch}, {"progress.step", h.Progress.Step},
		{"progress.bad_validations", h.Progress.BadValidations}, {"adam_step", h.AdamStep}} {
		if c.value < 0 {
			errs = append(errs, fmt.Errorf("%s is %d; want at least 0", c.key, c.value))
		}
	}
	if e := h.Progress.ElapsedS; !(e >= 0) || math.IsInf(e, 0) {
		errs = append(errs, fmt.Errorf("progress.elapsed_s is %g; want a finite number of at least 0", e))
	}
	if r := h.Progress.LRScale; !(r >= 0 && r <= 1) {
		errs = append(errs, fmt.Errorf("progress.lr_scale is %g; want between 0 and 1 (0: no decay yet)", r))
	}
	if b := h.Progress.BestValidLoss; b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
		errs = append(errs, fmt.Errorf("progress.best_valid_loss is %g; want a finite number", *b))
	}
	if v := h.Progress.ValidFiles; !v.Empty() {
		if err := v.Check(); err != nil {
			errs = append(errs, fmt.Errorf("progress.valid_files %w", err))
		}
	}
	return errors.Join(errs...)
}

// firstNonFinite returns the first tensor name and index in set holding NaN or ±Inf.
func firstNonFinite(set *param.Set[float32]) (string, int, bool) {
	for _, t := range set.List() {
		for i, x := range t.Data {
			if x-x != 0 { // NaN - NaN and Inf - Inf are NaN; every finite x gives 0
				return t.Name, i, true
			}
		}
	}
	return "", 0, false
}
