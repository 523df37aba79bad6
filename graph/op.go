// Package graph is attend's gorgonia plumbing: custom ops with hand-written forward and backward kernels
// (gather, per-step select, stack, masked update, bias, masked softmaxes, softmax cross-entropy), the layer norm
// of the unfused graphs in gorgonia's ops (LayerNorm), the builder with which the layers wrap their fused kernels
// as ops (Fused), and the binding of parameter tensors to graph nodes, so that gradients land back in the model's
// own buffers.
//
// None of these ops uses gorgonia's slice or concat, whose node hashing merges slices whose bounds agree mod
// 256 (gorgonia v0.9.18): every op here hashes its full parameters. Names hold no addresses, so that a graph's
// node hashes are the same from run to run: gorgonia's compiler merges any two nodes whose 32-bit hashes agree
// (value numbering by hash alone), and Params.Differentiate refuses a graph where two do (ErrHashCollision).
package graph

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/attend-nmt/attend/kernels"
	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Dtype returns gorgonia's dtype for the element type T.
func Dtype[T kernels.Float]() tensor.Dtype {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// kernelOp is a gorgonia Op defined by plain-Go functions over the input and output data. Every op of this
// package is one of these, so each op reads as: its name, its shape rule, its forward kernel and its gradient.
type kernelOp[T kernels.Float] struct {
	name    string       // identifies the op and all its parameters; it is the node hash, so it must be unique per behaviour
	inDims  []int        // dimensions of each input (for gorgonia's type system)
	shape   tensor.Shape // of the output; empty for a scalar
	forward func(in [][]T, out []T)
	// backward returns one gradient node per input (nil where the op is not differentiable). nil backward: the op
	// has no gradient (it is itself a gradient op or reads only constants).
	backward func(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error)
}

// newOp is the op called name, with inputs of inDims dimensions, an output of the given shape, and forward as its
// kernel; its backward is set afterwards, if it has one.
func newOp[T kernels.Float](name string, shape tensor.Shape, inDims []int, forward func(in [][]T, out []T)) *kernelOp[T] {
	return &kernelOp[T]{name: name, inDims: inDims, shape: shape.Clone(), forward: forward}
}

func (op *kernelOp[T]) Arity() int { return len(op.inDims) }

func (op *kernelOp[T]) Type() hm.Type {
	a := hm.TypeVariable('a')
	types := make([]hm.Type, 0, len(op.inDims)+1)
	for _, d := range op.inDims {
		types = append(types, tensorType(d, a))
	}
	types = append(types, tensorType(len(op.shape), a))
	return hm.NewFnType(types...)
}

func tensorType(dims int, a hm.TypeVariable) hm.Type {
	if dims == 0 {
		return a
	}
	return G.TensorType{Dims: dims, Of: a}
}

func (op *kernelOp[T]) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	for i, d := range in {
		if _, ok := d.(tensor.Shape); !ok {
			return nil, fmt.Errorf("graph: %s: input %d has no concrete shape", op.name, i)
		}
	}
	return op.shape.Clone(), nil
}

func (op *kernelOp[T]) inputs(values []G.Value) [][]T {
	if len(values) != len(op.inDims) {
		panic(fmt.Sprintf("graph: %s got %d inputs, want %d", op.name, len(values), len(op.inDims)))
	}
	data := make([][]T, len(values))
	for i, v := range values {
		switch x := v.Data().(type) {
		case []T:
			data[i] = x
		case T:
			data[i] = []T{x}
		default:
			panic(fmt.Sprintf("graph: %s input %d has data %T", op.name, i, v.Data()))
		}
	}
	return data
}

func (op *kernelOp[T]) Do(values ...G.Value) (G.Value, error) {
	data := op.inputs(values)
	if len(op.shape) == 0 {
		out := make([]T, 1)
		op.forward(data, out)
		return scalar(out[0]), nil
	}
	out := tensor.New(tensor.WithShape(op.shape.Clone()...), tensor.Of(Dtype[T]()))
	op.forward(data, out.Data().([]T))
	return out, nil
}

// UsePreallocDo lets gorgonia's tape machine reuse the node's memory between runs.
func (op *kernelOp[T]) UsePreallocDo(prealloc G.Value, values ...G.Value) (G.Value, error) {
	out, ok := prealloc.Data().([]T)
	if len(op.shape) == 0 || !ok || !prealloc.Shape().Eq(op.shape) {
		return op.Do(values...)
	}
	op.forward(op.inputs(values), out)
	return prealloc, nil
}

func scalar[T kernels.Float](v T) G.Value {
	switch x := any(v).(type) {
	case float32:
		return G.NewF32(x)
	default:
		return G.NewF64(any(v).(float64))
	}
}

func (op *kernelOp[T]) ReturnsPtr() bool     { return false }
func (op *kernelOp[T]) CallsExtern() bool    { return false }
func (op *kernelOp[T]) OverwritesInput() int { return -1 }
func (op *kernelOp[T]) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "attend.%s", op.name)
}
func (op *kernelOp[T]) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *kernelOp[T]) String() string { return op.name }

func (op *kernelOp[T]) DiffWRT(n int) []bool {
	wrt := make([]bool, n)
	if op.backward == nil {
		return wrt
	}
	for i := range wrt {
		wrt[i] = true
	}
	return wrt
}

func (op *kernelOp[T]) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.backward == nil {
		return nil, fmt.Errorf("graph: %s has no gradient", op.name)
	}
	return op.backward(inputs, output, grad)
}

// apply adds op to the graph with the given inputs.
func apply[T kernels.Float](op *kernelOp[T], inputs ...*G.Node) *G.Node {
	n, err := G.ApplyOp(op, inputs...)
	if err != nil {
		panic(fmt.Sprintf("graph: applying %s: %v", op.name, err))
	}
	return n
}

// viewOp is a kernelOp whose output is a view of memory the op owns (a fused op's gradient in the arena)
// rather than a fresh tensor. It is a separate type because it must not offer UsePreallocDo: gorgonia allocates
// a value of its own for every node whose op does, which is the copy a view saves.
type viewOp[T kernels.Float] struct {
	k    *kernelOp[T]
	view func(in [][]T) []T // the output's data, len = product of the output shape
}

func (op *viewOp[T]) Arity() int    { return op.k.Arity() }
func (op *viewOp[T]) Type() hm.Type { return op.k.Type() }
func (op *viewOp[T]) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return op.k.InferShape(in...)
}
func (op *viewOp[T]) ReturnsPtr() bool      { return true }
func (op *viewOp[T]) CallsExtern() bool     { return false }
func (op *viewOp[T]) OverwritesInput() int  { return -1 }
func (op *viewOp[T]) WriteHash(h hash.Hash) { op.k.WriteHash(h) }
func (op *viewOp[T]) Hashcode() uint32      { return op.k.Hashcode() }
func (op *viewOp[T]) String() string        { return op.k.String() }

func (op *viewOp[T]) Do(values ...G.Value) (G.Value, error) {
	return tensor.New(tensor.WithShape(op.k.shape.Clone()...), tensor.WithBacking(op.view(op.k.inputs(values)))), nil
}
