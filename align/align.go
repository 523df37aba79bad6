// Package align scores decoder states against encoder states and turns the scores into attention weights and a
// context vector: each score function sits behind one Scorer interface, in one file holding its parameters, its
// plain-Go forward and backward step and its gorgonia expression; masking, softmax and the weighted sum (and
// their backward pass) happen once, in Attend and AttendBackward, for all of them.
package align

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Scorer computes alignment scores e_ti between decoder queries and the encoder memory of a batch. The memory
// is (rows, srcLen, MemDim) and a query batch is (rows, QueryDim). What depends only on the memory (the keys) is
// computed once per sentence by Keys and reused at every decoder step.
//
// The same scorer serves inference (Score), the fused training op (Score with its work kept per step, then
// ScoreBackward and KeysBackward) and the unfused training graph (Graph), whose gradient gorgonia derives: that
// graph is the reference the hand-written backward pass is tested against.
type Scorer[T kernels.Float] interface {
	// Params lists the tensors the optimiser updates; gradients passed to ScoreBackward and KeysBackward come
	// in the same order, one slice per tensor.
	Params() []*param.Tensor[T]
	// Init draws fresh weights from rng.
	Init(rng *rand.Rand)
	// KeyWidth is the number of values Keys writes per source position.
	KeyWidth() int
	// Keys writes the memory-only part of the score, keys (rows, srcLen, KeyWidth()), for memory
	// (rows, srcLen, MemDim) whose rows have the given source lengths.
	Keys(memory []T, lengths []int, rows, srcLen int, keys []T)
	// WorkSize is the number of values of work that Score needs for a batch of rows × srcLen.
	WorkSize(rows, srcLen int) int
	// Score writes the scores (rows, srcLen) of the queries (rows, QueryDim) against the keys. work holds
	// WorkSize(rows, srcLen) values: scratch, and afterwards what ScoreBackward reads. It allocates nothing.
	Score(query, keys []T, rows, srcLen int, scores, work []T)
	// ScoreBackward adds the gradients of the scores, given their gradient dScores (rows, srcLen), into dQuery
	// (rows, QueryDim), dKeys (rows, srcLen, KeyWidth()) and grads (one per Params). work is that of the Score
	// call being differentiated; ScoreBackward may overwrite it.
	ScoreBackward(query, keys, work, dScores []T, rows, srcLen int, dQuery, dKeys []T, grads [][]T)
	// KeysBackward adds the gradients of Keys, given dKeys, into dMemory (rows, srcLen, MemDim) and grads.
	KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T)
	// Graph binds the score to one training graph for batches of rows × srcLen.
	Graph(p *graph.Params[T], rows, srcLen int) GraphScorer
}

// GraphScorer is a score function in a gorgonia training graph.
type GraphScorer interface {
	// Keys returns the memory-only part of the score for memory (rows, srcLen, MemDim); the source lengths are
	// read at run time from *lengths.
	Keys(memory *G.Node, lengths *[]int) *G.Node
	// Score returns the scores (rows, srcLen) of query (rows, QueryDim) against keys.
	Score(query, keys *G.Node) *G.Node
}

// Attender is implemented by attention whose step is more than one row of scores per query (multi-head): it
// does the whole step itself, in place of Score with Attend and of their backward passes. The decoder finds it
// by type assertion; such a scorer's Score panics.
type Attender[T kernels.Float] interface {
	// AttendStep writes the weights to export (rows, srcLen), which are exactly 0 past each row's length, and
	// the context (rows, MemDim), for the queries (rows, QueryDim) against the keys of memory. noise (rows,
	// srcLen) holds standard Gumbel draws in training for attention that samples (Sampler), and is nil
	// otherwise and at inference. work holds WorkSize values.
	AttendStep(query, keys, memory, noise []T, lengths []int, rows, srcLen int, weights, ctx, work []T)
	// AttendStepBackward adds the gradients of the context, given dCtx (rows, MemDim), into dQuery, dKeys,
	// dMemory and grads, reading the work of the matching AttendStep (which it may overwrite).
	AttendStepBackward(query, keys, memory, work, dCtx []T, lengths []int, rows, srcLen int, dQuery, dKeys, dMemory []T, grads [][]T)
}

// HeadWeigher is implemented by attention with several heads of weights (multi-head): after an AttendStep,
// HeadWeights returns a view into that step's work of every head's weights, (rows, HeadCount, srcLen), exactly 0
// past each row's length; the exported weights of AttendStep are their average.
type HeadWeigher[T kernels.Float] interface {
	HeadCount() int
	HeadWeights(work []T, rows, srcLen int) []T
}

// GraphAttender is an Attender's graph form: a GraphScorer that also implements it does the whole step.
type GraphAttender interface {
	// Attend returns the weights (rows, srcLen) and the context (rows, MemDim) of query against the keys of
	// memory (rows, srcLen, MemDim); noise is as for AttendStep, (rows, srcLen) or nil.
	Attend(query, keys, memory, noise *G.Node, lengths *[]int) (weights, ctx *G.Node)
}

// Sampler is implemented by attention that samples in training: the training graph then feeds it standard
// Gumbel noise, (rows, srcLen) per step.
type Sampler interface {
	// Samples reports whether the attention needs noise in training.
	Samples() bool
}

// Config gives the sizes a score function may use.
type Config struct {
	MemDim   int // width of an encoder state
	QueryDim int // width of a decoder state
	Dim      int // width of the score's hidden layer (additive; local's centre predictor)
	Window   int // half-width D of local attention's window, in words
	Heads    int // heads of multi-head attention (Dim must be a multiple)
	// Temperature is τ of hard attention's Gumbel-softmax.
	Temperature float64
}

// Names lists the score functions New knows, in the order of the README's table; "mlp" is also accepted, as an
// alias of "additive".
func Names() []string {
	return []string{"additive", "dot", "scaled-dot", "general", "cosine", "concat", "local", "multi-head", "hard"}
}

// New registers the parameters of the score function called name in set (under "attn.*") and returns it. An
// unknown name, or sizes the score cannot work with, is an error. With a shape-only set (param.NewShapeSet) it
// checks a configuration without allocating anything.
func New[T kernels.Float](name string, set *param.Set[T], cfg Config) (Scorer[T], error) {
	if cfg.MemDim < 1 || cfg.QueryDim < 1 {
		return nil, fmt.Errorf("align: memory width %d and query width %d must be positive", cfg.MemDim, cfg.QueryDim)
	}
	switch name {
	case "additive", "mlp":
		if cfg.Dim < 1 {
			return nil, fmt.Errorf("align: the additive score needs a hidden width (attn_dim) of at least 1, got %d", cfg.Dim)
		}
		return NewAdditive(set, cfg.MemDim, cfg.QueryDim, cfg.Dim), nil
	case "dot":
		return NewDot(set, cfg.MemDim, cfg.QueryDim, false), nil
	case "scaled-dot":
		return NewDot(set, cfg.MemDim, cfg.QueryDim, true), nil
	case "general":
		return NewGeneral(set, cfg.MemDim, cfg.QueryDim), nil
	case "cosine":
		return NewCosine(set, cfg.MemDim, cfg.QueryDim), nil
	case "concat":
		return NewConcat(set, cfg.MemDim, cfg.QueryDim), nil
	case "local":
		if cfg.Dim < 1 || cfg.Window < 1 {
			return nil, fmt.Errorf("align: local attention needs a window (model.window) and a hidden width (model.attn_dim) of at least 1, got %d and %d", cfg.Window, cfg.Dim)
		}
		return NewLocal(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Window), nil
	case "multi-head":
		if cfg.Heads < 1 || cfg.Dim < cfg.Heads || cfg.Dim%cfg.Heads != 0 {
			return nil, fmt.Errorf("align: multi-head attention splits model.attn_dim (%d) into model.heads (%d) equal heads: it must be a positive multiple of it", cfg.Dim, cfg.Heads)
		}
		return NewMultiHead(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Heads), nil
	case "hard":
		if cfg.Dim < 1 || !(cfg.Temperature > 0 && cfg.Temperature < math.Inf(1)) {
			return nil, fmt.Errorf("align: hard attention needs a hidden width (model.attn_dim) of at least 1 and a finite temperature (model.temperature) above 0, got %d and %g", cfg.Dim, cfg.Temperature)
		}
		return NewHardAttention(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Temperature), nil
	default:
		return nil, fmt.Errorf("align: unknown score function %q (want one of %s, or mlp for additive)", name, strings.Join(Names(), ", "))
	}
}

// Attend turns scores (rows, srcLen) into attention weights and context vectors: positions at or past a row's
// length are masked, so their weight is exactly 0; the rest go through a max-shifted softmax; the context of row
// r is Σ_i weights[r,i] · memory[r,i,:] (rows, memDim). scores is left unchanged unless it is weights.
func Attend[T kernels.Float](scores []T, lengths []int, memory []T, rows, srcLen, memDim int, weights, ctx []T) {
	if len(scores) != rows*srcLen || len(weights) != rows*srcLen || len(memory) != rows*srcLen*memDim || len(ctx) != rows*memDim {
		panic(fmt.Sprintf("align: Attend shapes: scores %d weights %d memory %d ctx %d for rows=%d srcLen=%d memDim=%d",
			len(scores), len(weights), len(memory), len(ctx), rows, srcLen, memDim))
	}
	copy(weights, scores)
	for r := 0; r < rows; r++ {
		kernels.SoftmaxRow(weights[r*srcLen:(r+1)*srcLen], lengths[r])
		// ctx[r] (1, memDim) = weights[r] (1, srcLen) · memory[r] (srcLen, memDim)
		kernels.Gemm(false, false, 1, memDim, srcLen, 1, weights[r*srcLen:(r+1)*srcLen], srcLen,
			memory[r*srcLen*memDim:(r+1)*srcLen*memDim], memDim, 0, ctx[r*memDim:(r+1)*memDim], memDim)
	}
}

// AttendBackward is the backward pass of Attend. Given the weights Attend wrote and the gradient dCtx
// (rows, memDim) of the context, it writes the gradient of the scores into dScores (rows, srcLen) and adds that
// of the memory into dMemory (rows, srcLen, memDim). Masked positions get exactly 0, as their weight is 0, and
// so does every position of a row of length 0, whose uniform weights do not depend on the scores.
func AttendBackward[T kernels.Float](weights []T, lengths []int, memory, dCtx []T, rows, srcLen, memDim int, dScores, dMemory []T) {
	if len(weights) != rows*srcLen || len(dScores) != rows*srcLen || len(memory) != rows*srcLen*memDim ||
		len(dMemory) != rows*srcLen*memDim || len(dCtx) != rows*memDim {
		panic(fmt.Sprintf("align: AttendBackward shapes: weights %d dScores %d memory %d dMemory %d dCtx %d for rows=%d srcLen=%d memDim=%d",
			len(weights), len(dScores), len(memory), len(dMemory), len(dCtx), rows, srcLen, memDim))
	}
	for r := 0; r < rows; r++ {
		g := dCtx[r*memDim : (r+1)*memDim]
		w := weights[r*srcLen : (r+1)*srcLen]
		ds := dScores[r*srcLen : (r+1)*srcLen]
		var dot T
		for i := range w {
			// forward: ctx = Σ_i w_i mem_i, so dw_i = dCtx · mem_i and dmem_i += w_i dCtx
			m := memory[(r*srcLen+i)*memDim : (r*srcLen+i+1)*memDim]
			dm := dMemory[(r*srcLen+i)*memDim : (r*srcLen+i+1)*memDim]
			var dw T
			for j, gj := range g {
				dw += gj * m[j]
				dm[j] += w[i] * gj
			}
			ds[i] = dw
			dot += w[i] * dw
		}
		if lengths[r] <= 0 {
			clear(ds)
			continue
		}
		// forward: w = softmax(e), so de_i = w_i (dw_i − Σ_j w_j dw_j)
		for i := range ds {
			ds[i] = w[i] * (ds[i] - dot)
		}
	}
}

// AttendGraph is Attend in a training graph: masked softmax of scores (rows, srcLen), then the context
// (rows, memDim) over memory (rows, srcLen, memDim).
func AttendGraph[T kernels.Float](scores *G.Node, lengths *[]int, memory *G.Node) (weights, ctx *G.Node) {
	rows, srcLen, memDim := memory.Shape()[0], memory.Shape()[1], memory.Shape()[2]
	weights = graph.MaskedSoftmax[T](scores, lengths)
	w3 := G.Must(G.Reshape(weights, []int{rows, 1, srcLen}))
	return weights, G.Must(G.Reshape(G.Must(G.BatchedMatMul(w3, memory)), []int{rows, memDim}))
}
