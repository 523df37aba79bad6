package align

import (
	"fmt"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
)

// Scorer is a score function with one row of scores per query: e_ti for every source position i of each row,
// which Soft turns into an Attention. Score computes the raw scores, ScoreBackward differentiates them, and Graph
// gives them as a gorgonia expression.
type Scorer[T kernels.Float] interface {
	Keyed[T]
	// Score writes the scores (rows, srcLen) of the queries (rows, QueryDim) against the keys; state is the
	// step's state for a Stateful scorer (rows, srcLen·StateWidth) and nil for the others. work holds
	// WorkSize(rows, srcLen) values: scratch, and afterwards what ScoreBackward reads. It allocates nothing.
	Score(query, keys, state []T, rows, srcLen int, scores, work []T)
	// ScoreBackward adds the gradients of the scores, given their gradient dScores (rows, srcLen), into dQuery
	// (rows, QueryDim), dKeys (rows, srcLen, KeyWidth()), dState (a Stateful scorer's) and grads (one per
	// Params). work is that of the Score call being differentiated; ScoreBackward may overwrite it.
	ScoreBackward(query, keys, state, work, dScores []T, rows, srcLen int, dQuery, dKeys, dState []T, grads [][]T)
	// Graph binds the score to one training graph for batches of rows × srcLen.
	Graph(p *graph.Params[T], rows, srcLen int) GraphScorer
}

// GraphScorer is a Scorer in a gorgonia training graph.
type GraphScorer interface {
	// Keys returns the memory-only part of the score for memory (rows, srcLen, MemDim); the source lengths are
	// read at run time from *lengths.
	Keys(memory *G.Node, lengths *[]int) *G.Node
	// Score returns the scores (rows, srcLen) of query (rows, QueryDim) against keys, given the step's state
	// (nil unless the scorer is Stateful).
	Score(query, keys, state *G.Node) *G.Node
}

// Stateful is implemented by a Scorer whose scores read a state carried from step to step, StateWidth values per
// source position, zero before the first step. Soft computes the next state from the state and the step's
// weights, after the softmax.
type Stateful[T kernels.Float] interface {
	StateWidth() int
	// NextState writes next (rows, srcLen·StateWidth) from the state before the step and its weights
	// (rows, srcLen).
	NextState(state, weights []T, rows, srcLen int, next []T)
	// NextStateBackward adds the gradients of NextState, given dNext, into dState and dWeights.
	NextStateBackward(state, weights, dNext []T, rows, srcLen int, dState, dWeights []T)
	// GraphNextState is NextState in a training graph.
	GraphNextState(state, weights *G.Node) *G.Node
}

// Soft is the soft attention of a Scorer: a masked softmax of its scores gives the weights, the context is the
// weighted sum of the memory, and a Stateful scorer's state follows from the weights.
type Soft[T kernels.Float] struct {
	Scorer[T]
	stateful Stateful[T] // the Scorer as Stateful, or nil
}

var _ Attention[float32] = (*Soft[float32])(nil)

// NewSoft returns the soft attention of s.
func NewSoft[T kernels.Float](s Scorer[T]) *Soft[T] {
	stateful, _ := s.(Stateful[T])
	return &Soft[T]{Scorer: s, stateful: stateful}
}

// StateWidth is the scorer's, or 0 when it has no state.
func (a *Soft[T]) StateWidth() int {
	if a.stateful == nil {
		return 0
	}
	return a.stateful.StateWidth()
}

// WorkSize is the scorer's work, then room for the gradient of the scores and, with a state, of the weights
// (rows, srcLen each).
func (a *Soft[T]) WorkSize(rows, srcLen int) int {
	n := a.Scorer.WorkSize(rows, srcLen) + rows*srcLen
	if a.stateful != nil {
		n += rows * srcLen
	}
	return n
}

// split cuts work into the scorer's, dScores and dWeights (nil without state).
func (a *Soft[T]) split(work []T, rows, srcLen int) (scoreWork, dScores, dWeights []T) {
	n, rs := a.Scorer.WorkSize(rows, srcLen), rows*srcLen
	if a.stateful != nil {
		dWeights = work[n+rs : n+2*rs]
	}
	return work[:n], work[n : n+rs], dWeights
}

// Step scores the queries (into s.Weights), turns the scores into weights and the context (Attend), and with a
// state writes the next one.
func (a *Soft[T]) Step(s Step[T]) {
	if len(s.Work) != a.WorkSize(s.Rows, s.SrcLen) || len(s.Weights) != s.Rows*s.SrcLen {
		panic(fmt.Sprintf("align: Soft.Step got work %d, weights %d for %d×%d", len(s.Work), len(s.Weights), s.Rows, s.SrcLen))
	}
	scoreWork, _, _ := a.split(s.Work, s.Rows, s.SrcLen)
	a.Score(s.Query, s.Keys, s.State, s.Rows, s.SrcLen, s.Weights, scoreWork)
	Attend(s.Weights, s.Lengths, s.Memory, s.Rows, s.SrcLen, len(s.Context)/s.Rows, s.Weights, s.Context)
	if a.stateful != nil {
		a.stateful.NextState(s.State, s.Weights, s.Rows, s.SrcLen, s.Next)
	}
}

// StepBackward differentiates Step: the state's update, Attend, then the scores. g.Weights, when not nil, is
// added to the gradient of the weights.
func (a *Soft[T]) StepBackward(s Step[T], g StepGrad[T]) {
	scoreWork, dScores, dWeights := a.split(s.Work, s.Rows, s.SrcLen)
	if a.stateful != nil {
		copy(dWeights, g.Weights)
		if g.Weights == nil {
			clear(dWeights)
		}
		a.stateful.NextStateBackward(s.State, s.Weights, g.Next, s.Rows, s.SrcLen, g.State, dWeights)
	} else {
		dWeights = g.Weights
	}
	AttendBackward(s.Weights, s.Lengths, s.Memory, g.Context, dWeights, s.Rows, s.SrcLen, len(s.Context)/s.Rows, dScores, g.Memory)
	a.ScoreBackward(s.Query, s.Keys, s.State, scoreWork, dScores, s.Rows, s.SrcLen, g.Query, g.Keys, g.State, g.Params)
}

// Graph binds the scorer to p for batches of rows × srcLen.
func (a *Soft[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphAttention {
	return &graphSoft[T]{GraphScorer: a.Scorer.Graph(p, rows, srcLen), stateful: a.stateful}
}

// graphSoft is Soft in a training graph.
type graphSoft[T kernels.Float] struct {
	GraphScorer
	stateful Stateful[T]
}

// Step returns AttendGraph of the scores, and the next state.
func (g *graphSoft[T]) Step(query, keys, memory, noise, state *G.Node, lengths *[]int) (weights, ctx, next *G.Node) {
	weights, ctx = AttendGraph[T](g.Score(query, keys, state), lengths, memory)
	if g.stateful != nil {
		next = g.stateful.GraphNextState(state, weights)
	}
	return weights, ctx, next
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

// AttendBackward is the backward pass of Attend. Given the weights Attend wrote, the gradient dCtx (rows, memDim)
// of the context and dWeights (rows, srcLen) that of the weights themselves (nil: none), it writes the gradient
// of the scores into dScores (rows, srcLen) and adds that of the memory into dMemory (rows, srcLen, memDim).
// Masked positions get exactly 0, as their weight is 0, and so does every position of a row of length 0, whose
// uniform weights do not depend on the scores.
func AttendBackward[T kernels.Float](weights []T, lengths []int, memory, dCtx, dWeights []T, rows, srcLen, memDim int, dScores, dMemory []T) {
	if len(weights) != rows*srcLen || len(dScores) != rows*srcLen || len(memory) != rows*srcLen*memDim ||
		len(dMemory) != rows*srcLen*memDim || len(dCtx) != rows*memDim {
		panic(fmt.Sprintf("align: AttendBackward shapes: weights %d dScores %d memory %d dMemory %d dCtx %d for rows=%d srcLen=%d memDim=%d",
			len(weights), len(dScores), len(memory), len(dMemory), len(dCtx), rows, srcLen, memDim))
	}
	for r := 0; r < rows; r++ {
		g := dCtx[r*memDim : (r+1)*memDim]
		w := weights[r*srcLen : (r+1)*srcLen]
		ds := dScores[r*srcLen : (r+1)*srcLen]
		for i := range w {
			// forward: ctx = Σ_i w_i mem_i, so dw_i = dCtx · mem_i and dmem_i += w_i dCtx
			m := memory[(r*srcLen+i)*memDim : (r*srcLen+i+1)*memDim]
			dm := dMemory[(r*srcLen+i)*memDim : (r*srcLen+i+1)*memDim]
			var dw T
			if dWeights != nil {
				dw = dWeights[r*srcLen+i]
			}
			for j, gj := range g {
				dw += gj * m[j]
			}
			kernels.Axpy(w[i], g, dm)
			ds[i] = dw
		}
		if lengths[r] <= 0 {
			clear(ds)
			continue
		}
		// forward: w = softmax(e), so de_i = w_i (dw_i − Σ_j w_j dw_j)
		kernels.SoftmaxRowBackward(w, ds, ds)
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
