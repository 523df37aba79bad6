package model

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/param"
	"reflect"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
	"go.yaml.in/yaml/v3"
)

// Config is everything a training run reads: one struct, loaded from YAML on top of Default, with any key
// overridable on the command line as section.key=value.
type Config struct {
	Model  ModelConfig  `yaml:"model"`
	Data   DataConfig   `yaml:"data"`
	Train  TrainConfig  `yaml:"train"`
	Decode DecodeConfig `yaml:"decode"`
}

// ModelConfig gives the network's shape: widths, cells, attention and depth.
type ModelConfig struct {
	// Type is the architecture: "rnn" (a recurrent encoder and decoder with attention; "" means the same, as in
	// checkpoints from before the key) or "transformer" (self-attention only, Vaswani et al. 2017: model.d_model,
	// model.heads, model.ff, model.layers blocks each side, model.positions, model.tied_embeddings and
	// model.dropout shape it; the recurrent keys are not read).
	Type      string `yaml:"type"`
	Emb       int    `yaml:"emb"`        // source and target embedding width
	EncHidden int    `yaml:"enc_hidden"` // encoder units per direction (the encoder is bidirectional, so its states are twice as wide)
	DecHidden int    `yaml:"dec_hidden"` // decoder units
	AttnDim   int    `yaml:"attn_dim"`   // hidden width of the additive and hard scores, of local attention's centre predictor, and of multi-head attention's heads together
	Cell      string `yaml:"cell"`       // recurrent cell of the encoder
	// Attention is the score function that weighs the source words at each output step (mlp is another name for
	// additive).
	Attention string `yaml:"attention"`
	Window    int    `yaml:"window"` // half-width of local attention's window, in words (read by local attention only)
	// Heads is the number of heads of multi-head attention, which split model.attn_dim, of the self-attention
	// layers, which split 2×model.enc_hidden, and of a Transformer's attention, which split model.d_model: it
	// must divide each width it splits.
	Heads int `yaml:"heads"`
	// SelfAttentionLayers stacks this many Transformer encoder blocks (multi-head self-attention, residual, layer
	// norm, feed-forward of 2× the memory width, residual, layer norm) on the recurrent encoder's states (0: none).
	// The decoder attends over the last block's output; its initial state still comes from the recurrent
	// encoder's final states.
	SelfAttentionLayers int `yaml:"self_attention_layers"`
	// Temperature is the temperature τ of hard attention's Gumbel-softmax in training (read by hard attention only).
	Temperature float64 `yaml:"temperature"`
	// InputFeeding adds the attentional vector f_t = tanh(A [s_t; c_t] + a), fed to the next decoder step and read
	// by the output layer in place of s_t (Luong et al. 2015; OpenNMT-py's input_feed).
	InputFeeding bool `yaml:"input_feeding"`
	// Layers stacks this many recurrent layers in the encoder (each bidirectional, reading [fwd ; bwd] of the
	// layer below) and in the decoder (each above the first reading [output of the layer below ; context], the
	// first alone attending), with dropout between layers, as OpenNMT-py's -layers. 0 counts as 1, as in
	// checkpoints written before the key existed. A Transformer has this many blocks in its encoder and as many
	// in its decoder.
	Layers int `yaml:"layers"`
	// AttendAfterInput attends in Luong et al.'s order (2015; OpenNMT-py's decoder) instead of Bahdanau et al.'s:
	// at each step the decoder LSTM first reads the previous target word (and f_{t-1} with model.input_feeding),
	// and its new state s_t, which knows that word, queries the attention; the context then goes to input
	// feeding, to the layers above and to the output layer, but not into the first layer's input. false (what
	// checkpoints from before this key mean too) attends with s_{t-1}, the state before the previous word was
	// read, and feeds the context to the LSTM. With model.layers above 1 the first layer's state is the query, as
	// with false (GNMT's stacking: the bottom layer attends).
	AttendAfterInput bool `yaml:"attend_after_input"`
	// FullContextAlignment gives the model an alignment attention for guided alignment to train and for word
	// alignment (align, translate --alignments) to read, as fairseq's full-context alignment (Garg et al. 2019):
	// the decoder's attention function with the same weights, whose query at step t is the decoder's query plus
	// emb(y_t)·W — it also knows the word being aligned, which the decoder's attention, predicting that word,
	// cannot. It needs train.guided_alignment (nothing else trains W) and does not change translations; heat maps
	// still show the decoder's attention.
	FullContextAlignment bool    `yaml:"full_context_alignment"`
	Dropout              float64 `yaml:"dropout"` // dropout rate on embeddings, between stacked layers and before the output layer (a Transformer's: on the embeddings and on each sub-layer's output)
	// DModel is a Transformer's width (read with model.type transformer): its embeddings and every block's input
	// and output. model.heads must divide it.
	DModel int `yaml:"d_model"`
	// FF is the inner width of a Transformer's position-wise feed-forward layers (read with model.type
	// transformer).
	FF int `yaml:"ff"`
	// Positions is how a Transformer knows word order (read with model.type transformer): "sinusoidal" (fixed
	// sines and cosines, any length) or "learned" (a trained vector per position, up to model.max_positions;
	// later positions reuse the last).
	Positions    string `yaml:"positions"`
	MaxPositions int    `yaml:"max_positions"` // positions a learned table holds (read with model.positions learned)
	// TiedEmbeddings makes a Transformer's output layer the target embeddings, transposed (read with model.type
	// transformer; Marian's tied-embeddings, OpenNMT-py's share_decoder_embeddings): fewer weights, often better
	// on small corpora.
	TiedEmbeddings bool `yaml:"tied_embeddings"`
	// AttentionLayer is the Transformer decoder block (1 to model.layers; 0: the last) whose attention over the
	// source, averaged over its heads (or model.alignment_head's alone), is where the model looked: heat maps,
	// alignments and --attention read it.
	AttentionLayer int `yaml:"attention_layer"`
	// AlignmentHead is the head (1 to model.heads) of model.attention_layer's attention over the source that a
	// Transformer reports alone as where it looked, and that train.guided_alignment trains toward the links, as
	// Garg et al. (2019) train one head of one block and leave the others free to attend as translation needs
	// (read with model.type transformer). 0 reports the heads' average; train.guided_alignment needs a head.
	AlignmentHead int `yaml:"alignment_head"`
}

// Model types of ModelConfig.Type; the empty string means TypeRNN.
const (
	TypeRNN         = "rnn"
	TypeTransformer = "transformer"
)

// IsTransformer reports whether the model is a Transformer (model.type transformer).
func (m ModelConfig) IsTransformer() bool { return m.Type == TypeTransformer }

// DataConfig controls tokenizing, vocabularies and batching.
type DataConfig struct {
	Lowercase   bool `yaml:"lowercase"`    // whether the text is lowercased before tokenizing
	MinFreq     int  `yaml:"min_freq"`     // the vocabularies keep the tokens seen at least this often in the training data
	MaxVocab    int  `yaml:"max_vocab"`    // cap on each vocabulary's size, the 4 entries <pad>, <unk>, <s> and </s> included (0: no cap)
	MaxLen      int  `yaml:"max_len"`      // training pairs with a side longer than this many tokens are left out
	Batch       int  `yaml:"batch"`        // sentence pairs per batch (with data.batch_tokens: the most per batch)
	BatchTokens int  `yaml:"batch_tokens"` // most tokens per batch, counted as rows × longer padded side, up to data.batch pairs (0: data.batch pairs)
	BucketChunk int  `yaml:"bucket_chunk"` // pairs are sorted by source length within chunks of this many batches
	RoundLen    int  `yaml:"round_len"`    // padded lengths are rounded up to a multiple of this, for fewer graph shapes; at most data.max_len
	// Subword splits words into subwords before the vocabularies are built: "none" (words are the tokens; "" means
	// the same) or "bpe" (byte-pair encoding: training learns data.merges merges jointly on the source and target
	// sides of the training corpus, after tokenizing and lowercasing, and stores them in the checkpoint;
	// translation splits its input and joins its output with them; data.max_len and data.min_freq then count
	// subwords).
	Subword string `yaml:"subword"`
	Merges  int    `yaml:"merges"` // BPE merges to learn with data.subword bpe (e.g. 8000); must be 0 with data.subword none
	// MemoryMB is the most memory, in MB (fractions allowed), the training corpus's token ids may take (about
	// 1.6 bytes a token); a larger corpus is kept on disk, in a file beside the checkpoint, and each batch is read
	// from there when it is due: the same batches either way, so it may change on resume. 0: a quarter of the
	// machine's memory.
	MemoryMB float64 `yaml:"memory_mb"`
}

// Subword settings of DataConfig.Subword; the empty string means SubwordNone.
const (
	SubwordNone = "none" // words are the model's tokens
	SubwordBPE  = "bpe"  // words are split by byte-pair-encoding merges learned at training time
)

// Tokenizer is the tokenizer of the model's input text: lowercasing as Lowercase says, and, when the model
// does not segment words itself (Subword none), keeping the "@@" markers of text split into subwords
// beforehand, so that a model can be trained and used on the output of `attend bpe apply` or subword-nmt.
// With Subword bpe the text must be words: "@@" is punctuation like any other.
func (d DataConfig) Tokenizer() *data.RegexTokenizer {
	return &data.RegexTokenizer{Lowercase: d.Lowercase, KeepBPEMarkers: d.Subword != SubwordBPE}
}

// TrainConfig controls the optimizer and the training loop.
type TrainConfig struct {
	Epochs    int     `yaml:"epochs"`     // passes over the training data
	MaxSteps  int     `yaml:"max_steps"`  // training stops after this many steps in all, whatever train.epochs says (0: no limit)
	LR        float64 `yaml:"lr"`         // Adam's learning rate
	Clip      float64 `yaml:"clip"`       // the global gradient norm is clipped to this (0: no clipping)
	Seed      uint64  `yaml:"seed"`       // seed of the initial weights, of the order of the batches and of dropout
	LogEvery  int     `yaml:"log_every"`  // steps between metrics lines
	SaveEvery int     `yaml:"save_every"` // steps between checkpoints within an epoch (0: only at epoch ends)
	Threads   int     `yaml:"threads"`    // CPU threads, of Go and of OpenBLAS (0: one per core of the machine)
	// Workers splits each batch among this many workers, each stepping its share of the sentences on a thread
	// of its own with single-threaded matrix products; their gradients are summed in memory before one update,
	// as processes under MPI sum theirs (docs/mpi.md). It trains as one worker does, to float32 summation order,
	// dropout included. 0 is one worker per thread of train.threads; 1 steps the whole batch at once with
	// products on every thread. Each worker holds the activations of its share and gradients of its own.
	Workers    int  `yaml:"workers"`
	GraphCache int  `yaml:"graph_cache"` // how many compiled batch shapes to keep (each holds its node values)
	Unfused    bool `yaml:"unfused"`     // graphs are built from gorgonia's own ops instead of the fused kernels: slower, for checking
	// Precision is the number format of training's products (kernels.Precision): auto picks the fastest that
	// keeps float32's quality here, bfloat16x3 where Intel's AMX runs, bfloat16 on AMD's CPUs with AVX512-BF16,
	// float32 elsewhere; float32 keeps every product in float32 (the bit-for-bit reference); bf16 multiplies the
	// output layer (its forward product and both backward ones, most of a step's arithmetic) with bfloat16 terms
	// and float32 sums, on AMX or AVX512-BF16, each term rounded to 8 bits of mantissa (a relative 2^-9; the
	// quality is measured in docs/speed.md); bf16x3 multiplies the output layer, the decoder's recurrent products
	// and the recurrent layers' weight gradients on AMX with each float32 term split into two bfloat16s, hi + lo,
	// summed as hi·hi + hi·lo + lo·hi (a relative 2^-16 a term, three bfloat16 products' work). The weights, the
	// optimizer, the softmax and every other layer stay float32. Training refuses a setting this CPU cannot run
	// (bf16 without AMX or AVX512-BF16, bf16x3 without AMX). It replaces train.bf16 and train.bf16x3: a config or
	// checkpoint that sets them reads bf16 true as bf16, bf16x3 true as auto, both false as float32.
	Precision kernels.Precision `yaml:"precision"`
	// SplitVocabulary has training's workers, when their output layers multiply in bfloat16 (train.precision
	// bf16 or bf16x3), share the output layer's vocabulary out between them, each taking every worker's rows through
	// its share of the words, rather than each its own rows through all of them: each core then reads only its
	// share of the layer's weights, which bounds the layer's speed. The same sums in another order, so the numbers
	// differ from false's in float32's last bits. With one worker, or float32 products, it changes nothing.
	SplitVocabulary bool `yaml:"split_vocabulary"`
	// MaxBadSteps stops training after this many steps in a row whose loss or gradient norm is not finite (each
	// such step is skipped, its update not applied).
	MaxBadSteps int `yaml:"max_bad_steps"`
	// ValidEvery validates every this many steps as well as at each epoch end (0: at epoch ends only).
	ValidEvery int `yaml:"valid_every"`
	// LRDecay multiplies the learning rate by this factor after each validation that does not improve on the
	// best (0: never decay).
	LRDecay float64 `yaml:"lr_decay"`
	// Patience stops training after this many validations in a row without improvement (0: never stop early).
	Patience int `yaml:"patience"`
	// Warmup raises the learning rate linearly over this many steps, then decays it with the inverse square
	// root of the step (0: a constant rate).
	Warmup int `yaml:"warmup"`
	// LabelSmoothing trains against (1−ε)·onehot + ε/V instead of the one-hot target (0: none); the training
	// loss logged is then the smoothed one, validation stays plain cross-entropy.
	LabelSmoothing float64 `yaml:"label_smoothing"`
	// KeepLast keeps the checkpoints of the last this many saves as NAME.step-N.ckpt beside --out (0: none).
	KeepLast int `yaml:"keep_last"`
	// ValidBLEU greedy-decodes the first this many validation pairs at every validation and logs their BLEU
	// (tokenized, lowercased as the model reads them; 0: no validation BLEU).
	ValidBLEU int `yaml:"valid_bleu"`
	// BestMetric chooses the validation figure that picks the best checkpoint and steers train.lr_decay and
	// train.patience: "ppl" (perplexity; "" in older checkpoints means the same) or "bleu" (needs
	// train.valid_bleu).
	BestMetric string `yaml:"best_metric"`
	// GuidedAlignment trains the attention toward alignment links, as Marian's --guided-alignment does: a
	// Pharaoh file ("i-j" 0-based source-target word pairs), one line per line of the training corpus, in the
	// positions of the words attend's tokenizer reads, before any subword split (attend align --statistical
	// writes one for the same corpus); "auto" to have the built-in statistical aligner (the one of attend align
	// --statistical, grow-diag-final-and) link the training corpus before the first step, its links written
	// beside --out as NAME.align, which a resumed run reads again instead of aligning anew; "" for none. With
	// data.subword bpe a link between two words links every subword of the one to every subword of the other.
	// The training loss adds train.guided_alignment_weight times the cross-entropy between each target token's
	// attention and its links spread evenly over their source tokens (tokens without links add nothing). A
	// recurrent model needs a model.attention whose weights are one softmax over the source words (not local,
	// multi-head or hard); a Transformer trains the head model.alignment_head of block model.attention_layer,
	// which must be set.
	GuidedAlignment string `yaml:"guided_alignment"`
	// GuidedAlignmentWeight weighs the guided-alignment loss against the translation's (Marian's default 0.1).
	GuidedAlignmentWeight float64 `yaml:"guided_alignment_weight"`
	// WatchSentences names the validation sentences whose greedy translation and attention every validation writes
	// beside --out, to NAME.watch/STEP.json with a heat map a sentence (docs/training.md): a count n, the first
	// n−1 validation pairs and one more that train.seed draws from the rest, as JoeyNMT chooses them (0, or ""
	// in checkpoints from before the key: none); or their line numbers in the validation files, from 1,
	// separated by commas ("1,5,9").
	WatchSentences string `yaml:"watch_sentences"`
}

// WatchLines reads train.watch_sentences: a count n (lines nil), or the validation lines listed (n 0). It
// returns an error naming the key for anything else.
func (t TrainConfig) WatchLines() (n int, lines []int, err error) {
	s := strings.TrimSpace(t.WatchSentences)
	if s == "" {
		return 0, nil, nil
	}
	if !strings.Contains(s, ",") {
		if n, err = strconv.Atoi(s); err == nil && n >= 0 {
			return n, nil, nil
		}
		return 0, nil, fmt.Errorf("config: train.watch_sentences is %q; want a count of at least 0, or line numbers from 1 separated by commas", s)
	}
	for _, f := range strings.Split(s, ",") {
		line, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || line < 1 {
			return 0, nil, fmt.Errorf("config: train.watch_sentences is %q: %q is not a line number (from 1)", s, f)
		}
		lines = append(lines, line)
	}
	return 0, lines, nil
}

// WorkerCount is the number of workers of train.workers for a run on threads threads (train.workers 0 is one
// per thread).
func (t TrainConfig) WorkerCount(threads int) int {
	if t.Workers > 0 {
		return t.Workers
	}
	return max(threads, 1)
}

// GuideAuto is the train.guided_alignment that has the built-in statistical aligner link the training corpus.
const GuideAuto = "auto"

// BestByBLEU reports whether validation BLEU, not perplexity, picks the best checkpoint.
func (t TrainConfig) BestByBLEU() bool { return t.BestMetric == "bleu" }

// DecodeConfig controls translation.
type DecodeConfig struct {
	MaxLen int `yaml:"max_len"` // longest output, in tokens
	Batch  int `yaml:"batch"`   // sentences per decoding batch
	// Alpha is the GNMT length penalty beam search ranks with by default: log p / ((5+|Y|)/6)^alpha. 0 (what
	// checkpoints from before this key mean too) ranks by plain log p; translate --alpha overrides it, within the
	// same range (0 to 10) as --alpha and serve's requests.
	Alpha float64 `yaml:"alpha"`
}

// Default holds the value of every key that a config file, a --set or a checkpoint's configuration leaves out:
// the widths of the "small" model, trained on cased text split into subwords by 8,000 joint BPE merges, so that
// translations come out cased and detokenized, and unguided. configs/small.yaml is the same model on lowercased
// words; DefaultPreset is what `attend train` uses without --config.
func Default() Config {
	return Config{
		Model: ModelConfig{Type: TypeRNN, Emb: 128, EncHidden: 128, DecHidden: 256, AttnDim: 128, Cell: "lstm", Attention: "additive", Window: 3, Heads: 4, Temperature: 1, Layers: 1, Dropout: 0.2,
			DModel: 256, FF: 1024, Positions: "sinusoidal", MaxPositions: 256},
		Data: DataConfig{MinFreq: 2, MaxLen: 50, Batch: 64, BucketChunk: 100, RoundLen: 4, Subword: SubwordBPE, Merges: 8000},
		Train: TrainConfig{Epochs: 10, LR: 1e-3, Clip: 1, Seed: 1, LogEvery: 50, SaveEvery: 500, Threads: 0, GraphCache: 4, MaxBadSteps: 10,
			BestMetric: "ppl", GuidedAlignmentWeight: 0.1, Precision: kernels.PrecisionAuto, SplitVocabulary: true, WatchSentences: "4"},
		Decode: DecodeConfig{MaxLen: 80, Batch: 64},
	}
}

// DefaultPreset is the configuration `attend train` uses without --config (configs/default.yaml): Default with
// guided full-context alignment (model.full_context_alignment, train.guided_alignment auto at weight 0.1), so
// that a new model's alignments (translate --alignments, heatmap --alignment, serve's page) link words as an
// aligner does. On Multi30k De→En over three seeds it lowered neither BLEU nor perplexity (docs/alignment.md);
// it costs the statistical aligner's run before training and 5 to 26% more training time. A Transformer
// (--set model.type=transformer without --config) starts from Default instead: the alignment attention is the
// recurrent decoder's.
func DefaultPreset() Config {
	cfg := Default()
	cfg.Model.FullContextAlignment, cfg.Train.GuidedAlignment = true, GuideAuto
	return cfg
}

// DefaultPresetWith returns DefaultPreset with set (the command line's keys; nil: none) applied, or Default with
// them when they make the model a Transformer, whose attention the preset's alignment attention does not fit.
func DefaultPresetWith(set func(*Config) error) (Config, error) {
	cfg := Default()
	if set == nil {
		return DefaultPreset(), nil
	}
	if err := set(&cfg); err != nil || cfg.Model.IsTransformer() {
		return cfg, err
	}
	cfg = DefaultPreset()
	return cfg, set(&cfg)
}

// LoadConfig reads a YAML file over Default and validates the result. Unknown sections and keys, a section or
// key given twice, and values of the wrong type, are errors naming the file, the line and the key. A key
// replaced since (train.bf16, train.bf16x3: replacedPrecision) is read as its replacement, and notes say so, one
// sentence a file, for a warning at the start of a run.
func LoadConfig(path string) (cfg Config, notes []string, err error) {
	raw, err := data.ReadFile(path) // at most data.MaxFileBytes: not /dev/zero into memory
	if err != nil {
		return Default(), nil, fmt.Errorf("config: %w", err)
	}
	if cfg, notes, err = parseConfig(raw); err != nil {
		return cfg, nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, notes, nil
}

// parseConfig is LoadConfig after reading the file: raw over Default, validated.
func parseConfig(raw []byte) (Config, []string, error) {
	cfg := Default()
	notes, err := decodeStrict(raw, &cfg)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, notes, cfg.Validate()
}

// replacedPrecision is the train.precision that a config or checkpoint from before the key meant by train.bf16
// and train.bf16x3 (nil: not given, when bf16 was false and bf16x3 true): bf16 true is bf16, else bf16x3 true
// is auto (bfloat16x3 where AMX runs), and both false float32. The note says so, naming the keys.
func replacedPrecision(bf16, bf16x3 *bool) (p kernels.Precision, note string) {
	p = kernels.PrecisionAuto
	switch {
	case bf16 != nil && *bf16:
		p = kernels.PrecisionBF16
	case bf16x3 != nil && !*bf16x3:
		p = kernels.PrecisionFloat32
	}
	var old []string
	for _, k := range []struct {
		name string
		v    *bool
	}{{"train.bf16", bf16}, {"train.bf16x3", bf16x3}} {
		if k.v != nil {
			old = append(old, fmt.Sprintf("%s: %v", k.name, *k.v))
		}
	}
	verb := "is"
	if len(old) > 1 {
		verb = "are"
	}
	return p, fmt.Sprintf("%s %s replaced by train.precision; read as train.precision: %s", strings.Join(old, " and "), verb, p)
}

// decodeStrict sets the keys present in raw on cfg. It walks the YAML tree itself rather than letting yaml.v3
// decode into the struct, so that messages speak of config keys ("unknown key model.embedding_size") rather
// than of Go types, with the line of the offending key. A section or a key given twice is an error naming both
// lines: yaml.v3 parses a mapping with a repeated key into a node without complaint, and the last value would
// silently win.
func decodeStrict(raw []byte, cfg *Config) (notes []string, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, syntaxError(raw, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // an empty file (or only comments) changes nothing
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want sections (%s), found %s", root.Line, tagList(reflect.TypeOf(*cfg)), describeNode(root))
	}
	top := reflect.ValueOf(cfg).Elem()
	sections := map[string]int{} // line of each section's first occurrence
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		sec, ok := fieldByTag(top, key.Value)
		if !ok {
			return nil, fmt.Errorf("line %d: unknown section %q (want %s)", key.Line, key.Value, tagList(top.Type()))
		}
		if first, twice := sections[key.Value]; twice {
			return nil, fmt.Errorf("line %d: section %s is given twice, at lines %d and %d; merge them into one", key.Line, key.Value, first, key.Line)
		}
		sections[key.Value] = key.Line
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			continue // "train:" with nothing under it
		}
		if val.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: section %s: want keys (%s), found %s", val.Line, key.Value, tagList(sec.Type()), describeNode(val))
		}
		keys := map[string]int{}       // line of each key's first occurrence in the section
		replaced := map[string]*bool{} // train.bf16 and train.bf16x3, read as train.precision
		for j := 0; j+1 < len(val.Content); j += 2 {
			k, v := val.Content[j], val.Content[j+1]
			if b, err := strconv.ParseBool(v.Value); key.Value == "train" && (k.Value == "bf16" || k.Value == "bf16x3") && err == nil {
				replaced[k.Value] = &b
				continue
			}
			field, ok := fieldByTag(sec, k.Value)
			if !ok {
				return nil, fmt.Errorf("line %d: unknown key %s.%s (%s has %s)", k.Line, key.Value, k.Value, key.Value, tagList(sec.Type()))
			}
			if first, twice := keys[k.Value]; twice {
				return nil, fmt.Errorf("line %d: key %s.%s is given twice, at lines %d and %d; keep one", k.Line, key.Value, k.Value, first, k.Line)
			}
			keys[k.Value] = k.Line
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: %s.%s wants %s, found %s", v.Line, key.Value, k.Value, kindName(field.Kind()), describeNode(v))
			}
			if err := setScalar(field, v.Value); err != nil {
				return nil, fmt.Errorf("line %d: %s.%s wants %s, got %q", v.Line, key.Value, k.Value, kindName(field.Kind()), v.Value)
			}
		}
		if _, given := keys["precision"]; len(replaced) > 0 && !given {
			p, note := replacedPrecision(replaced["bf16"], replaced["bf16x3"])
			cfg.Train.Precision, notes = p, append(notes, note)
		}
	}
	return notes, nil
}

// syntaxError restates a YAML syntax error with the line where the text stops being valid YAML. yaml.v3 reports
// the line where the enclosing structure began, often the line before the mistake; the first prefix of whole
// lines that fails to parse ends at the mistake itself.
func syntaxError(raw []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
		msg = rest
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	for n := 1; n <= len(lines); n++ {
		var doc yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:n], nil), &doc) != nil {
			return fmt.Errorf("line %d: %s (YAML syntax)", n, msg)
		}
	}
	return fmt.Errorf("%s (YAML syntax)", msg)
}

// describeNode names a YAML node's kind for messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

// tagList is "a, b, c": the YAML names of a config struct's fields.
func tagList(t reflect.Type) string {
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Tag.Get("yaml")
	}
	return strings.Join(names, ", ")
}

// kindName says in words what a config field of kind k accepts.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Int:
		return "an integer"
	case reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a string"
}

// setScalar parses text as field's type and stores it; the field is left unchanged on error.
func setScalar(field reflect.Value, text string) error {
	switch field.Kind() {
	case reflect.String:
		field.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return err
		}
		field.SetBool(b)
	case reflect.Int:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return err
		}
		field.SetInt(n)
	case reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return err
		}
		field.SetUint(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return err
		}
		field.SetFloat(f)
	default:
		panic(fmt.Sprintf("config: field kind %s is not supported", field.Kind()))
	}
	return nil
}

// Set applies one "section.key=value" override, for example "train.lr=5e-4". The key is the YAML name; the value
// must parse as the key's type (an integer key rejects "1.5"). Set does not validate ranges: call Validate once
// every override is in.
func (c *Config) Set(assignment string) error {
	key, value, ok := strings.Cut(assignment, "=")
	section, name, dotted := strings.Cut(key, ".")
	if !ok || !dotted || section == "" || name == "" {
		return fmt.Errorf("config: --set %q: want section.key=value", assignment)
	}
	top := reflect.ValueOf(c).Elem()
	sec, ok := fieldByTag(top, section)
	if !ok {
		return fmt.Errorf("config: --set %q: no section %q (want %s)", assignment, section, tagList(top.Type()))
	}
	field, ok := fieldByTag(sec, name)
	if b, err := strconv.ParseBool(value); !ok && section == "train" && (name == "bf16" || name == "bf16x3") && err == nil {
		old := map[string]*bool{name: &b}
		p, _ := replacedPrecision(old["bf16"], old["bf16x3"])
		return fmt.Errorf("config: --set %q: train.%s is replaced by train.precision: --set train.precision=%s", assignment, name, p)
	}
	if !ok {
		return fmt.Errorf("config: --set %q: section %s has no key %q (it has %s)", assignment, section, name, tagList(sec.Type()))
	}
	if err := setScalar(field, value); err != nil {
		return fmt.Errorf("config: --set %q: %s wants %s, got %q", assignment, key, kindName(field.Kind()), value)
	}
	return nil
}

// fieldByTag returns the field of struct v whose yaml tag is name.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).Tag.Get("yaml") == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Limits of the settings Validate accepts. The upper bounds keep a typo (or a crafted checkpoint header) from
// asking for an absurd allocation; they are far above any model this trainer is meant for.
const (
	maxWidth   = 1 << 16 // model widths
	maxLength  = 1 << 14 // sentence lengths in tokens
	maxBatch   = 1 << 16 // sentences per batch
	maxThreads = 1 << 8
	maxMerges  = 1 << 20 // BPE merges (subword-nmt's usual range is 1,000 to 60,000)
	maxLayers  = 8       // stacked recurrent layers (GNMT, among the deepest, has 8)
	// maxMemoryMB is a petabyte: data.memory_mb's bytes (× 2^20) then fit an int64 with room to spare, where
	// 1e300 MB had overflowed to a negative budget and put the whole corpus on disk.
	maxMemoryMB = 1 << 30
)

// Validate reports every setting outside its valid range, each by its key with the range it must lie in (all of
// them at once, joined). Every number key must be finite, read or not (finite); the ranges of single keys are
// keyRules; the checks that tie keys together are here.
func (c Config) Validate() error {
	errs, notFinite := finite(c)
	for _, r := range keyRules() {
		if notFinite[r.key] {
			continue
		}
		if err := r.check(c); err != nil {
			errs = append(errs, err)
		}
	}
	m, d, t := c.Model, c.Data, c.Train
	if err := encoder.Cell(m.Cell).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: model.cell: %w", err))
	}
	// The score checks its own settings, on a shape-only parameter set (nothing is allocated).
	if _, err := align.New[float32](m.Attention, param.NewShapeSet[float32](),
		align.Config{MemDim: 2 * m.EncHidden, QueryDim: m.DecHidden, Dim: m.AttnDim, Window: m.Window, Heads: m.Heads, Temperature: m.Temperature}); err != nil {
		errs = append(errs, fmt.Errorf("config: model.attention: %w", err))
	}
	if m.SelfAttentionLayers > 0 && m.EncHidden > 0 && (m.Heads < 1 || 2*m.EncHidden%m.Heads != 0) {
		errs = append(errs, fmt.Errorf("config: model.heads is %d, which does not divide the memory width 2×model.enc_hidden = %d that model.self_attention_layers = %d splits into heads",
			m.Heads, 2*m.EncHidden, m.SelfAttentionLayers))
	}
	// Every batch is padded up to a multiple of round_len, so a round_len above max_len pads every sentence to
	// round_len tokens however short: 16384 of them a row, which exhausts the memory.
	if d.RoundLen > d.MaxLen && d.MaxLen >= 1 && d.RoundLen <= maxLength {
		errs = append(errs, fmt.Errorf("config: data.round_len is %d, above data.max_len %d; want at most data.max_len (every padded length is rounded up to a multiple of round_len)", d.RoundLen, d.MaxLen))
	}
	if (d.Subword == SubwordNone || d.Subword == "") && d.Merges != 0 {
		errs = append(errs, fmt.Errorf("config: data.merges is %d but data.subword is none; want data.merges 0, or data.subword bpe to learn merges", d.Merges))
	}
	if t.BestByBLEU() && t.ValidBLEU == 0 {
		errs = append(errs, fmt.Errorf("config: train.best_metric is bleu but train.valid_bleu is 0; set valid_bleu to the number of validation sentences to translate"))
	}
	if t.GuidedAlignment != "" && !m.IsTransformer() { // (a Transformer guides a head of its own: validateTransformer)
		if err := align.Builtin[float32]().Guidable(m.Attention); err != nil {
			errs = append(errs, fmt.Errorf("config: train.guided_alignment: %w", err))
		}
	}
	if _, _, err := t.WatchLines(); err != nil {
		errs = append(errs, err)
	}
	if m.FullContextAlignment && t.GuidedAlignment == "" {
		errs = append(errs, fmt.Errorf("config: model.full_context_alignment needs train.guided_alignment: only the guided-alignment loss trains its weights"))
	}
	if m.IsTransformer() {
		errs = append(errs, m.validateTransformer(t)...)
	}
	return errors.Join(errs...)
}

// YAML returns the configuration as YAML text.
func (c Config) YAML() string {
	out, err := yaml.Marshal(c)
	if err != nil {
		panic(err) // a plain struct always marshals
	}
	return string(out)
}
