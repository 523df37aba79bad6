// Package align is the decoder's attention: one interface, Attention, for every attention function (its
// parameters, the keys it computes once per sentence, one step forward and backward in plain Go, and its gorgonia
// expression), a Registry that lists them by name, and the score functions themselves, one file each. Most are a
// Scorer — one row of scores per query — which Soft turns into an Attention: masking, softmax and the weighted sum
// (Attend, AttendBackward) happen once, there, for all of them. Pharaoh links and AER are here too.
package align

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Attention is one attention function of the decoder over the encoder memory of a batch: the memory is
// (rows, srcLen, MemDim), a query batch (rows, QueryDim). What depends only on the memory (the keys) is computed
// once per sentence by Keys; each decoder step then calls Step. An attention may carry a state from step to step
// (StateWidth values per source position, zero before the first step: coverage, the previous weights of a
// location-aware score); the decoder keeps it with each hypothesis, reorders it in beam search and passes it
// back through training.
//
// The same value serves inference (Step), the fused training op (Step with its Work kept per step, then
// StepBackward and KeysBackward) and the unfused training graph (Graph), whose gradient gorgonia derives: that
// graph is the reference the hand-written backward pass is tested against.
type Attention[T kernels.Float] interface {
	Keyed[T]
	// StateWidth is the number of state values per source position carried from one step to the next; 0 for an
	// attention without state. A state must stay 0 past each row's length.
	StateWidth() int
	// Step computes one step (see Step), with WorkSize values of work. It allocates nothing.
	Step(s Step[T])
	// StepBackward adds the gradients of one step into g, given the gradients of its outputs in g; s is the
	// Step as the forward pass left it (StepBackward may overwrite its Work).
	StepBackward(s Step[T], g StepGrad[T])
	// Graph binds the attention to one training graph for batches of rows × srcLen.
	Graph(p *graph.Params[T], rows, srcLen int) GraphAttention
}

// Keyed is what attention functions and scores have in common: their parameters, and the keys they compute once
// per sentence.
type Keyed[T kernels.Float] interface {
	// Params lists the tensors the optimiser updates; gradients passed to the backward passes come in the same
	// order, one slice per tensor.
	Params() []*param.Tensor[T]
	// Init draws fresh weights from rng.
	Init(rng *rand.Rand)
	// KeyWidth is the number of values Keys writes per source position.
	KeyWidth() int
	// Keys writes the memory-only part, keys (rows, srcLen, KeyWidth()), for memory (rows, srcLen, MemDim)
	// whose rows have the given source lengths.
	Keys(memory []T, lengths []int, rows, srcLen int, keys []T)
	// KeysBackward adds the gradients of Keys, given dKeys, into dMemory (rows, srcLen, MemDim) and grads.
	KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T)
	// WorkSize is the number of values of work one step (Attention.Step, Scorer.Score) needs for a batch of
	// rows × srcLen.
	WorkSize(rows, srcLen int) int
}

// Step is one attention step over a batch of Rows rows of SrcLen source positions: its inputs, its outputs, and
// Work, which carries what StepBackward reads from Step.
type Step[T kernels.Float] struct {
	Rows, SrcLen int
	Query        []T   // (rows, QueryDim): the decoder state s_{t-1} (s_t when the decoder attends after its input)
	Keys         []T   // (rows, srcLen, KeyWidth)
	Memory       []T   // (rows, srcLen, MemDim)
	Lengths      []int // (rows): positions at or past a row's length get weight exactly 0
	// Noise is (rows, srcLen) standard Gumbel draws in training for an attention that samples (Sampler); nil
	// otherwise and at inference.
	Noise []T
	// State is the state before the step and Next the state after it, (rows, srcLen·StateWidth) each, Next
	// written by Step; both nil when StateWidth is 0.
	State, Next []T
	Weights     []T // (rows, srcLen), written: exactly 0 past each row's length
	Context     []T // (rows, MemDim), written
	Work        []T // WorkSize(rows, srcLen) values
}

// StepGrad holds the gradients of one Step: those of its outputs, which StepBackward reads, and those of its
// inputs, which it adds to.
type StepGrad[T kernels.Float] struct {
	Context []T // dL/dContext (rows, MemDim), read
	Next    []T // dL/dNext, read; nil without state
	// Weights is an extra gradient of the exported weights (rows, srcLen), read; nil: none. Guided alignment
	// (Guide) gives it; only an attention whose Entry has no NoGuide reason reads it.
	Weights []T
	// Query, Keys, Memory and State (nil without state) are added to, and so is Params, one slice per Params().
	Query, Keys, Memory, State []T
	Params                     [][]T
}

// GraphAttention is an Attention in a gorgonia training graph.
type GraphAttention interface {
	// Keys returns the memory-only part for memory (rows, srcLen, MemDim); the source lengths are read at run
	// time from *lengths.
	Keys(memory *G.Node, lengths *[]int) *G.Node
	// Step returns the weights (rows, srcLen), the context (rows, MemDim) and the next state (nil without
	// state) of query (rows, QueryDim) against keys and memory; noise is as for Step.Noise, (rows, srcLen) or
	// nil, and state the state before the step (nil without state).
	Step(query, keys, memory, noise, state *G.Node, lengths *[]int) (weights, ctx, next *G.Node)
}

// HeadWeigher is implemented by attention with several heads of weights (multi-head): after a Step, HeadWeights
// returns a view into that step's work of every head's weights, (rows, HeadCount, srcLen), exactly 0 past each
// row's length; the exported weights of Step are their average.
type HeadWeigher[T kernels.Float] interface {
	HeadCount() int
	HeadWeights(work []T, rows, srcLen int) []T
}

// Sampler is implemented by attention that samples in training: the training graph then feeds it standard
// Gumbel noise, (rows, srcLen) per step.
type Sampler interface {
	// Samples reports whether the attention needs noise in training.
	Samples() bool
}

// Config gives the sizes an attention function may use.
type Config struct {
	MemDim   int // width of an encoder state
	QueryDim int // width of a decoder state
	Dim      int // width of the score's hidden layer (additive; local's centre predictor)
	Window   int // half-width D of local attention's window, in words
	Heads    int // heads of multi-head attention (Dim must be a multiple)
	// Temperature is τ of hard attention's Gumbel-softmax.
	Temperature float64
}

// Entry is one attention function of a Registry.
type Entry[T kernels.Float] struct {
	Name string // its model.attention
	// Alias marks a second name of an entry listed before it: New accepts it, Names leaves it out.
	Alias bool
	// NoGuide, when not empty, says why guided alignment (train.guided_alignment) cannot train this function's
	// weights toward links: they are not one softmax over the source positions whose backward reads
	// StepGrad.Weights.
	NoGuide string
	// New registers the function's parameters in set (under "attn.*") and returns it; sizes it cannot work
	// with are an error. With a shape-only set (param.NewShapeSet) it checks a configuration without
	// allocating anything.
	New func(set *param.Set[T], cfg Config) (Attention[T], error)
}

// Registry is a list of attention functions, which the decoder looks model.attention up in.
type Registry[T kernels.Float] []Entry[T]

// Builtin returns attend's attention functions, in the order of the README's table. It is the one list of them:
// a new one is a file in this package holding its type and its Entry's New, and one line here. (A table, not a
// map that each file fills from an init function: no package state, and the order is written down.)
func Builtin[T kernels.Float]() Registry[T] {
	return Registry[T]{
		{Name: "additive", New: newAdditive[T]},
		{Name: "mlp", Alias: true, New: newAdditive[T]},
		{Name: "dot", New: newDot[T](false)},
		{Name: "scaled-dot", New: newDot[T](true)},
		{Name: "general", New: newGeneral[T]},
		{Name: "cosine", New: newCosine[T]},
		{Name: "concat", New: newConcat[T]},
		{Name: "local", New: newLocal[T], NoGuide: "its weights are 0 outside a window around a predicted centre, " +
			"which no gradient from a link outside the window reaches"},
		{Name: "multi-head", New: newMultiHead[T], NoGuide: "its weights are the average of several heads' softmaxes, " +
			"whose backward pass takes no gradient of that average"},
		{Name: "hard", New: newHardAttention[T], NoGuide: "it trains on Gumbel-softmax samples and reads one position " +
			"at inference, not the distribution a link would train"},
	}
}

// Names lists the registry's functions in order, aliases (such as mlp for additive) left out.
func (r Registry[T]) Names() []string { return r.names(false) }

// names lists the registry's functions in order, leaving out aliases and, with guidable, those with a NoGuide
// reason.
func (r Registry[T]) names(guidable bool) []string {
	var names []string
	for _, e := range r {
		if !e.Alias && (!guidable || e.NoGuide == "") {
			names = append(names, e.Name)
		}
	}
	return names
}

// entry returns the entry called name, or an error listing the names there are.
func (r Registry[T]) entry(name string) (Entry[T], error) {
	for _, e := range r {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry[T]{}, fmt.Errorf("align: unknown score function %q (want one of %s)", name, strings.Join(r.Names(), ", "))
}

// New registers the parameters of the function called name in set and returns it. An unknown name, or sizes
// the function cannot work with, is an error.
func (r Registry[T]) New(name string, set *param.Set[T], cfg Config) (Attention[T], error) {
	if cfg.MemDim < 1 || cfg.QueryDim < 1 {
		return nil, fmt.Errorf("align: memory width %d and query width %d must be positive", cfg.MemDim, cfg.QueryDim)
	}
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	return e.New(set, cfg)
}

// Guidable reports an error saying why, when the function called name cannot be trained toward alignment links
// (Entry.NoGuide), or when there is no such function.
func (r Registry[T]) Guidable(name string) error {
	e, err := r.entry(name)
	if err != nil || e.NoGuide == "" {
		return err
	}
	return fmt.Errorf("align: guided alignment needs attention weights that are one softmax over the source positions; model.attention %s cannot be guided: %s (use one of %s)",
		name, e.NoGuide, strings.Join(r.names(true), ", "))
}

// Names lists the built-in attention functions (Builtin), aliases left out.
func Names() []string { return Builtin[float32]().Names() }

// New is Builtin().New: the built-in attention function called name, its parameters registered in set.
func New[T kernels.Float](name string, set *param.Set[T], cfg Config) (Attention[T], error) {
	return Builtin[T]().New(name, set, cfg)
}
