// Package param holds a model's named parameter tensors in a fixed order, so that the training graph, the
// inference path, the optimizer and the checkpoint all see the same memory under the same names.
package param

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/kernels"
)

// Tensor is one named, row-major parameter tensor.
type Tensor[T kernels.Float] struct {
	Name  string
	Shape []int
	Data  []T
	// Copies is the number of PyTorch parameters the tensor stands for, as their sum; 0 and 1 both mean itself
	// alone. An LSTM's bias is 2: PyTorch keeps b_ih and b_hh apart, both get the same gradient and, from the
	// same optimizer state, the same Adam step, so their sum moves twice as far as one bias would and the
	// gradient norm counts the gradient twice. The optimizer and the clip norm do that with a tensor of Copies 2,
	// which trains it exactly as PyTorch trains the pair.
	Copies int
}

// Data returns the data of each tensor, in order: the weights (or, of a set shaped alike, the gradients) that
// plain-Go passes take as slices.
func Data[T kernels.Float](tensors []*Tensor[T]) [][]T {
	out := make([][]T, len(tensors))
	for i, t := range tensors {
		out[i] = t.Data
	}
	return out
}

// Block returns the contiguous sub-tensor t[i] of a tensor whose first axis indexes blocks (for example gate i
// of a (4, In, H) LSTM weight), as a slice sharing t's memory.
func (t *Tensor[T]) Block(i int) []T {
	n := len(t.Data) / t.Shape[0]
	return t.Data[i*n : (i+1)*n]
}

// Set is an ordered collection of parameter tensors with unique names. Once packed (Pack, or a set made by
// ZerosLike), the tensors' data lie back to back in one buffer, Flat, so that an optimizer, a norm or a sum over
// processes is one loop or one call over all of them, as llm.c lays out its parameters.
type Set[T kernels.Float] struct {
	list       []*Tensor[T]
	byName     map[string]*Tensor[T]
	flat       []T  // every tensor's data, in order, once packed
	packed     bool // Pack has run and no tensor was added since
	shapesOnly bool
}

// NewSet returns an empty set.
func NewSet[T kernels.Float]() *Set[T] { return &Set[T]{byName: map[string]*Tensor[T]{}} }

// NewShapeSet returns an empty set that records names and shapes but allocates no data (every Data is nil):
// what a model of some configuration would hold, learned without the memory.
func NewShapeSet[T kernels.Float]() *Set[T] {
	return &Set[T]{byName: map[string]*Tensor[T]{}, shapesOnly: true}
}

// Add allocates a zero tensor of the given shape under name (no data in a shape-only set); a duplicate name is
// a programming error.
func (s *Set[T]) Add(name string, shape ...int) *Tensor[T] {
	if _, dup := s.byName[name]; dup {
		panic(fmt.Sprintf("param: duplicate parameter %q", name))
	}
	t := &Tensor[T]{Name: name, Shape: append([]int(nil), shape...)}
	if !s.shapesOnly {
		t.Data = make([]T, t.Size())
		s.packed = false
	}
	s.list = append(s.list, t)
	s.byName[name] = t
	return t
}

// Size is the number of values of t: the product of its shape.
func (t *Tensor[T]) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Pack moves the data of every tensor into one contiguous buffer, in order, keeping the values: each tensor
// keeps its identity, and its Data becomes a view of the buffer. Slices of Data taken before Pack no longer
// alias the tensor, so a model packs its set as the last step of its construction, before any view is taken.
func (s *Set[T]) Pack() {
	if s.packed || s.shapesOnly {
		return
	}
	s.flat = make([]T, s.Len())
	off := 0
	for _, t := range s.list {
		n := len(t.Data)
		copy(s.flat[off:off+n], t.Data)
		t.Data = s.flat[off : off+n : off+n]
		off += n
	}
	s.packed = true
}

// Flat returns every value of the set in one slice, the tensors back to back in order (packing the set first if
// needed: see Pack).
func (s *Set[T]) Flat() []T {
	s.Pack()
	return s.flat
}

// CopyRun is a run of values of Flat, [Lo, Hi), whose tensors all have Copies (1 for 0) copies.
type CopyRun struct{ Lo, Hi, Copies int }

// CopyRuns cuts Flat into the longest runs of tensors with the same number of copies (see Tensor.Copies), in
// order: one run for a set in which no tensor stands for several.
func (s *Set[T]) CopyRuns() []CopyRun {
	var runs []CopyRun
	off := 0
	for _, t := range s.list {
		c, n := max(t.Copies, 1), len(t.Data)
		if k := len(runs) - 1; k >= 0 && runs[k].Copies == c {
			runs[k].Hi += n
		} else if n > 0 {
			runs = append(runs, CopyRun{Lo: off, Hi: off + n, Copies: c})
		}
		off += n
	}
	return runs
}

// List returns the tensors in the order they were added.
func (s *Set[T]) List() []*Tensor[T] { return s.list }

// Get returns the tensor called name, or nil.
func (s *Set[T]) Get(name string) *Tensor[T] { return s.byName[name] }

// Len is the total number of scalar parameters.
func (s *Set[T]) Len() int {
	n := 0
	for _, t := range s.list {
		n += len(t.Data)
	}
	return n
}

// ZerosLike returns a packed set with the same names and shapes as s, every value zero (for gradients and
// optimizer moments).
func (s *Set[T]) ZerosLike() *Set[T] {
	z := &Set[T]{byName: map[string]*Tensor[T]{}, flat: make([]T, s.Len()), packed: true}
	off := 0
	for _, t := range s.list {
		n := len(t.Data)
		zt := &Tensor[T]{Name: t.Name, Shape: append([]int(nil), t.Shape...), Data: z.flat[off : off+n : off+n], Copies: t.Copies}
		z.list = append(z.list, zt)
		z.byName[zt.Name] = zt
		off += n
	}
	return z
}

// Zero sets every value of s to 0.
func (s *Set[T]) Zero() {
	if s.packed {
		clear(s.flat)
		return
	}
	for _, t := range s.list {
		clear(t.Data)
	}
}

// Uniform fills t with values drawn uniformly from [-bound, bound).
func Uniform[T kernels.Float](t *Tensor[T], bound float64, rng *rand.Rand) {
	for i := range t.Data {
		t.Data[i] = T((2*rng.Float64() - 1) * bound)
	}
}

// UniformSum fills t with sums of two values drawn uniformly from [-bound, bound): the distribution of
// PyTorch's LSTM bias b_ih + b_hh, which attend keeps as one tensor. Its variance is 2·bound²/3, twice
// Uniform's, and its density is a triangle on (-2·bound, 2·bound).
func UniformSum[T kernels.Float](t *Tensor[T], bound float64, rng *rand.Rand) {
	for i := range t.Data {
		t.Data[i] = T((2*rng.Float64()-1)*bound + (2*rng.Float64()-1)*bound)
	}
}

// Normal fills t with values drawn from N(0, std²).
func Normal[T kernels.Float](t *Tensor[T], std float64, rng *rand.Rand) {
	for i := range t.Data {
		t.Data[i] = T(rng.NormFloat64() * std)
	}
}

// InvSqrt returns 1/sqrt(n), the PyTorch default init bound for a layer with n inputs or n hidden units.
func InvSqrt(n int) float64 { return 1 / math.Sqrt(float64(n)) }
