package model

import (
	"fmt"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// MemoryEstimate is roughly what training a model takes in memory, in bytes, by part: what a run holds from its
// first step to its last. TrainingMemory computes it from the config alone, before anything is allocated.
type MemoryEstimate struct {
	Params int64 // the number of weights
	// Weights are the weights themselves, Moments Adam's two moments of each, Gradients the step's gradient and
	// the graph's own gradient buffers, as many again.
	Weights, Moments, Gradients int64
	// Activations are the forward values that the backward pass reads, and their gradients, for the largest
	// batch (data.batch rows of data.max_len words, or fewer rows under data.batch_tokens), shared by the
	// cached graphs. With several workers (train.workers) each holds those of its share of the batch, and
	// each graph has its own gradient buffers (counted in Gradients).
	Activations int64
}

// Total is the sum of the parts.
func (e MemoryEstimate) Total() int64 { return e.Weights + e.Moments + e.Gradients + e.Activations }

// String reads like "about 1.2 GB (30000000 weights 120 MB, Adam's moments 240 MB, gradients 240 MB, activations
// of the largest batch 600 MB)".
func (e MemoryEstimate) String() string {
	return fmt.Sprintf("about %s (%d weights %s, Adam's moments %s, gradients %s, activations of the largest batch %s)",
		Bytes(e.Total()), e.Params, Bytes(e.Weights), Bytes(e.Moments), Bytes(e.Gradients), Bytes(e.Activations))
}

// Bytes writes a size in bytes with a decimal unit: "512 B", "3.4 MB", "1.2 TB".
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, prefix := float64(n)/unit, 0
	for v >= unit && prefix < 5 {
		v /= unit
		prefix++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTPE"[prefix])
}

// TrainingMemory estimates the memory of training cfg's model over vocabularies src and tgt on workers workers
// (Trainer.SetWorkers; 0 counts as 1) in products (TrainConfig.Products), without allocating it: the weights' count comes from the parameter
// shapes, the activations from the buffers the fused kernels take for the largest batch (float32 throughout),
// for each worker's share of it. It is meant to tell a model that fits from one that cannot (within a third or
// so of what a run holds; TestTrainingMemoryMatchesTheHeap measures it), not to size buffers.
func TrainingMemory(cfg Config, src, tgt *data.Vocab, workers int, products kernels.Products) (MemoryEstimate, error) {
	shapes, err := newModel[float32](cfg.Model, src, tgt, param.NewShapeSet[float32](), nil)
	if err != nil {
		return MemoryEstimate{}, err
	}
	var p int64
	for _, t := range shapes.Params.List() {
		p += int64(t.Size())
	}
	const f = 4 // bytes per float32
	m, d := cfg.Model, cfg.Data
	round := func(n int) int64 {
		r := int64(max(d.RoundLen, 1))
		return (int64(n) + r - 1) / r * r
	}
	S, T := round(d.MaxLen), round(d.MaxLen+1) // the longest source and target (with </s>)
	R := int64(d.Batch)
	if d.BatchTokens > 0 {
		R = min(R, max(1, int64(d.BatchTokens)/max(S, T)))
	}
	n := min(int64(max(workers, 1)), R) // the workers with rows to step
	// The step's gradient, and the gradient buffers of each worker's graph.
	e := MemoryEstimate{Params: p, Weights: f * p, Moments: 2 * f * p, Gradients: (1 + n) * f * p}
	a, scratch := shapes.net.trainingBytes(m, products, largestBatch{S: S, T: T, R: R, workers: n}, int64(tgt.Size()))
	e.Activations = a + scratch
	return e, nil
}

// largestBatch is the largest batch a training step holds: R rows of S source and T target positions, shared
// out among workers workers.
type largestBatch struct{ S, T, R, workers int64 }

// rows is the largest worker's share of the rows.
func (b largestBatch) rows() int64 { return (b.R + b.workers - 1) / b.workers }

// trainingBytes is TrainingMemory's part for the recurrent model: the activations of each worker's share of
// the batch (the largest share counted for all; the whole batch's dropout masks are drawn before they are shared
// out), and the workers' scratch of products beyond float32's (kernels.Products): the output layer's, the
// decoder's gate weights packed both ways, and each worker's operands of the recurrences' weight gradients, the
// decoder's and the encoder's, at the longest batch: its widest input's transpose and the gates' gradient over
// every step's rows.
func (nt rnnNet[T]) trainingBytes(m ModelConfig, products kernels.Products, b largestBatch, vocab int64) (activations, scratch int64) {
	n := b.workers
	scratch = products.OutputBytes(m.DecHidden+2*m.EncHidden+m.Emb, int(vocab), graph.OutputChunk, int(n))
	gi := decoderGateInputs(m)
	He, Hd := int64(m.EncHidden), int64(m.DecHidden)
	gates := int64(4)
	if m.Cell == string(encoder.GRU) {
		gates = 3
	}
	decIn, encIn := max(gi-Hd, Hd), max(int64(m.Emb), He) // [emb; context (; feed)] or s; x or h
	if m.InputFeeding || m.Layers > 1 {
		decIn = max(decIn, Hd+2*He) // [f or s; context], the feed's or an upper layer's input
	}
	if m.Layers > 1 {
		encIn = max(encIn, 2*He) // an upper layer's input, both directions' states
	}
	scratch += products.PackedWeightBytes(gi, 4*Hd, n) +
		n*(products.WeightGradientBytes(b.T*b.rows(), decIn, 4*Hd)+products.WeightGradientBytes(b.S*b.rows(), encIn, gates*He))
	if n == 1 {
		return recurrentActivations(m, nt.dec.Attn, vocab, b.S, b.T, b.R), scratch
	}
	activations = n * recurrentActivations(m, nt.dec.Attn, vocab, b.S, b.T, b.rows())
	if m.Dropout > 0 {
		activations += 4 * maskValues(m, b.S, b.T, b.R)
	}
	return activations, scratch
}

// trainingBytes is TrainingMemory's part for a Transformer: the activations of each worker's share of the batch
// and the whole batch's dropout masks, and the output layer's scratch of products beyond float32's.
func (nt transformerNet[T]) trainingBytes(m ModelConfig, products kernels.Products, b largestBatch, vocab int64) (activations, scratch int64) {
	scratch = products.OutputBytes(m.DModel, int(vocab), graph.OutputChunk, int(b.workers))
	activations = b.workers * transformerActivations(m, vocab, b.S, b.T, b.rows())
	if m.Dropout > 0 {
		L := int64(max(m.Layers, 1))
		activations += 4 * b.R * int64(m.DModel) * (b.S*(1+2*L) + b.T*(1+3*L))
	}
	return activations, scratch
}

// maskValues is the number of values of the dropout masks of a batch of R rows of S source and T target
// positions.
func maskValues(m ModelConfig, S, T, R int64) int64 {
	E, He, Hd := int64(m.Emb), int64(m.EncHidden), int64(m.DecHidden)
	M := 2 * He
	out := Hd + M + E
	layers := int64(max(m.Layers, 1))
	return S*R*E + T*R*E + T*R*out + (layers-1)*(S*R*M+T*R*(Hd+M))
}

// recurrentActivations is the bytes of activations (MemoryEstimate.Activations) of a recurrent model's graph of
// a batch of R rows of S source and T target positions, for model m with attention attn over a target vocabulary
// of V words.
func recurrentActivations[F kernels.Float](m ModelConfig, attn align.Attention[F], V, S, T, R int64) int64 {
	const f = 4
	layers := max(m.Layers, 1)
	E, He, Hd := int64(m.Emb), int64(m.EncHidden), int64(m.DecHidden)
	M := 2 * He // the memory's width
	out := Hd + M + E
	var a int64 // values
	// Encoder: per layer and direction, an LSTM's gates and their gradients (8H), its previous states and
	// tanh c (3H) and output (H) per position, and the gradient of its input.
	in := E
	for range layers {
		a += 2 * S * R * (12*He + in)
		in = M
	}
	a += 2 * S * R * E // the source embeddings and their gradient
	// Self-attention blocks: queries, keys, values, context, residuals, the feed-forward layer (2M) and their
	// gradients, and each head's weights among the source words.
	a += int64(m.SelfAttentionLayers) * (19*S*R*M + 2*int64(max(m.Heads, 1))*R*S*S)
	// Decoder: the memory and the score's keys with their gradients, the score's work of every step, attention
	// weights and contexts, the first layer's gates (and gradients) and states, then the upper layers.
	kw := int64(attn.KeyWidth())
	a += R * S * (2*M + 2*kw)
	a += T * int64(attn.WorkSize(int(R), int(S)))
	a += T * R * (S + M + 11*Hd + Hd + M)
	if m.InputFeeding {
		a += T * R * (4*Hd + M)
	}
	if m.AttendAfterInput { // the first layer's input holds no context
		a -= T * R * M
	}
	if m.FullContextAlignment { // the alignment attention's inputs, query, work and weights at every step
		a += T*R*(E+Hd+S) + T*int64(attn.WorkSize(int(R), int(S)))
	}
	a += int64(layers-1) * T * R * (2*(Hd+M) + 13*Hd)
	a += 2 * T * R * E // the target embeddings and their gradient
	// The output layer: its input, the input's gradient and each part's gradient; the logits go
	// graph.OutputChunk rows at a time.
	a += 3*T*R*out + graph.OutputChunk*V
	// Values of the graph's own (unfused) nodes, about two output-layer inputs per target position.
	a += 2 * T * R * out
	if m.Dropout > 0 { // the masks
		a += maskValues(m, S, T, R)
	}
	return f * a
}

// transformerActivations is activations for a Transformer (model.type transformer): per block and position, its
// layer norms' outputs, queries, keys, values, contexts, residuals and feed-forward layer (about 10 values of
// d_model and one of model.ff in the encoder, 16 and one in the decoder, which also keeps the keys and values it
// reads of the memory), every head's weights, and the gradients of one block at a time; the output layer's
// chunk of logits.
func transformerActivations(m ModelConfig, V, S, T, R int64) int64 {
	const f = 4
	L, D, F, NH := int64(max(m.Layers, 1)), int64(m.DModel), int64(m.FF), int64(max(m.Heads, 1))
	enc := S * R * (10*D + F + NH*S)
	dec := T*R*(16*D+F+NH*(T+S)) + 2*S*R*D
	a := L*(enc+dec) + enc + dec         // the blocks, and the gradients of one of each
	a += 2*(S+T)*R*D + 2*T*R*D           // embeddings and the decoder's output, with gradients
	a += min(graph.OutputChunk, T*R) * V // the output layer's chunk of logits
	return f * a
}

// decoderGateInputs is the width of the first decoder layer's gate product's input, [emb; context (; feed); s]:
// the rows of its gate weights.
func decoderGateInputs(m ModelConfig) int64 {
	gi := int64(m.Emb + 2*m.EncHidden + m.DecHidden)
	if m.InputFeeding {
		gi += int64(m.DecHidden)
	}
	return gi
}
