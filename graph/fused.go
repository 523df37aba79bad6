package graph

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// scratchGrad returns a node holding g × stored, shaped like input: the gradient of a fused op whose forward (or
// first backward) pass already wrote the gradient into stored. after is the node that must run first (the fused
// op's output), g the incoming gradient.
func scratchGrad[T kernels.Float](name string, input, after, g *G.Node, stored func() []T) *G.Node {
	shape := input.Shape().Clone()
	op := &kernelOp[T]{
		name:    name,
		inDims:  []int{after.Dims(), g.Dims()},
		outDims: len(shape),
		shape:   func([]tensor.Shape) tensor.Shape { return shape.Clone() },
		forward: func(in [][]T, _ []tensor.Shape, out []T) {
			scale := in[1][0]
			for i, v := range stored() {
				out[i] = scale * v
			}
		},
	}
	return apply(op, after, g)
}

// OutputXent is the output layer, log-softmax and cross-entropy as one op: the summed loss of the rows of
// x (N, In) · w (In, V) + b (V) against *targets, ignoring rows whose target is pad. Its forward pass also
// computes every gradient (kernels.OutputXent), chunk by chunk, so no (N, V) matrix is ever kept.
func OutputXent[T kernels.Float](x, w, b *G.Node, targets *[]int, pad int) *G.Node {
	n, in, v := x.Shape()[0], x.Shape()[1], w.Shape()[1]
	const chunk = 256
	dx, dw, db := make([]T, n*in), make([]T, in*v), make([]T, v)
	scratch := make([]T, min(chunk, n)*v)
	op := &kernelOp[T]{
		name:    fmt.Sprintf("OutputXent(%p,%d,%d,%d)", targets, n, in, v),
		inDims:  []int{2, 2, 1},
		outDims: 0,
		shape:   func([]tensor.Shape) tensor.Shape { return tensor.ScalarShape() },
		forward: func(vals [][]T, _ []tensor.Shape, out []T) {
			out[0] = T(kernels.OutputXent(vals[0], vals[1], vals[2], *targets, pad, n, in, v, chunk, dx, dw, db, scratch))
		},
	}
	op.backward = func(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		stored := [][]T{dx, dw, db}
		grads := make(G.Nodes, 3)
		for i := range grads {
			s := stored[i]
			grads[i] = scratchGrad[T](fmt.Sprintf("OutputXentGrad(%p,%d)", targets, i), inputs[i], output, grad, func() []T { return s })
		}
		return grads, nil
	}
	return apply(op, x, w, b)
}
