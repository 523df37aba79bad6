package graph

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// viewGrad returns a gradient node of a fused op, shaped like input, whose value is the slice view returns:
// memory of the op's (in the arena), so no copy is kept per graph. Its inputs are the fused op's output, so that
// the op runs first, and the incoming gradient g, which view receives.
func viewGrad[T kernels.Float](name string, input, output, g *G.Node, view func(g []T) []T) *G.Node {
	op := &viewOp[T]{k: newOp[T](name, input.Shape(), []int{output.Dims(), g.Dims()}, nil), view: func(in [][]T) []T { return view(in[1]) }}
	n, err := G.ApplyOp(op, output, g)
	if err != nil {
		panic(fmt.Sprintf("graph: applying %s: %v", name, err))
	}
	return n
}

// OutputChunk is how many rows of logits OutputXent holds at a time: 6 MB for 5,898 words; 1,024 (24 MB) was no
// faster (BenchmarkOutputXent). Memory estimates count it.
const OutputChunk = 256

// OutputXent is the output layer, log-softmax and cross-entropy as one op: the summed loss of the rows of
// x (N, In) · w (In, V) + b (V) against *targets with label smoothing ε (0: none), ignoring rows whose target
// is pad. Its forward pass also computes every gradient (kernels.OutputXent), chunk by chunk, so no (N, V)
// matrix is ever kept.
//
// Rows whose target is pad are left out before the product (their gradients are zero), so padding costs
// nothing in the output layer.
//
// x is [parts[0] parts[1] …] ⊙ mask: the parts (N, d_i) side by side along the features, times the output
// layer's dropout mask (N, In = Σ d_i; nil: no dropout). The concatenated and masked x, and the gradients of the
// parts, live in the arena, so a cached graph holds no (N, Σ d_i) values of its own for them
// (a Concat and a HadamardProd node would each keep their output and their gradient per graph).
//
//	x = concat(parts) ⊙ mask;  dparts_i = (dx ⊙ mask)[:, off_i : off_i+d_i]
//
// The mask gets a zero gradient: it is an input, not a parameter.
func OutputXent[T kernels.Float](p *Params[T], parts []*G.Node, mask, w, b *G.Node, targets *[]int, pad int, smoothing float64) *G.Node {
	n, v := parts[0].Shape()[0], w.Shape()[1]
	widths, offsets := make([]int, len(parts)), make([]int, len(parts))
	in := 0
	for i, part := range parts {
		if part.Dims() != 2 || part.Shape()[0] != n {
			panic(fmt.Sprintf("graph: OutputXent part %d has shape %v, want (%d, _)", i, part.Shape(), n))
		}
		widths[i], offsets[i] = part.Shape()[1], in
		in += widths[i]
	}
	if w.Shape()[0] != in {
		panic(fmt.Sprintf("graph: OutputXent weight %v for %d features", w.Shape(), in))
	}
	inputs := append(append([]*G.Node(nil), parts...), w, b)
	masked := mask != nil
	if masked {
		if !mask.Shape().Eq(tensor.Shape{n, in}) {
			panic(fmt.Sprintf("graph: OutputXent mask %v, want (%d, %d)", mask.Shape(), n, in))
		}
		inputs = append(inputs, mask)
	}
	arena := p.Arena
	var dx, dw, db []T
	var realRows, realTargets []int // the rows whose target is not pad, and their targets (reused across runs)
	name := fmt.Sprintf("OutputXent(%d,%v,%d,%v,%g)", n, widths, v, masked, smoothing)
	return Fused(FusedOp[T]{
		Name:  name,
		Shape: tensor.ScalarShape(),
		Forward: func(vals [][]T, out []T) {
			// Only the rows with a real target go through the output layer: a third of a bucketed Multi30k
			// batch's rows are padding, whose loss and gradients are zero anyway.
			realRows, realTargets = realRows[:0], realTargets[:0]
			for r, y := range *targets {
				if y != pad {
					realRows, realTargets = append(realRows, r), append(realTargets, y)
				}
			}
			rows := len(realRows)
			x := arena.Get("xent.x", n*in)[:rows*in]
			for i, part := range vals[:len(parts)] {
				d, off := widths[i], offsets[i]
				for k, r := range realRows {
					copy(x[k*in+off:k*in+off+d], part[r*d:(r+1)*d])
				}
			}
			if masked {
				m := vals[len(vals)-1]
				for k, r := range realRows {
					kernels.MulSlice(x[k*in:(k+1)*in], m[r*in:(r+1)*in])
				}
			}
			wv, bv := vals[len(parts)], vals[len(parts)+1]
			dx, dw, db = arena.Get("xent.dx", n*in)[:rows*in], arena.Get("xent.dw", in*v), arena.Get("xent.db", v)
			scratch := arena.Get("xent.logits", min(OutputChunk, n)*v)
			out[0] = T(kernels.OutputXent(x, wv, bv, realTargets, pad, rows, in, v, OutputChunk, smoothing, dx, dw, db, scratch, kernels.OutputOf[T](p.Multiplier)))
		},
		Backward: func(vals [][]T, grad []T) [][]T {
			scale := grad[0]
			grads := make([][]T, len(vals))
			var m []T
			if masked {
				m = vals[len(vals)-1]
			}
			for i := range parts {
				d, off := widths[i], offsets[i]
				g := arena.Get(fmt.Sprintf("xent.dpart%d", i), n*d)
				clearPadRows(g, d, realRows)
				for k, r := range realRows {
					gr, dxr := g[r*d:(r+1)*d], dx[k*in+off:k*in+off+d]
					if masked {
						for j, mj := range m[r*in+off : r*in+off+d] {
							gr[j] = scale * dxr[j] * mj
						}
					} else {
						for j := range gr {
							gr[j] = scale * dxr[j]
						}
					}
				}
				grads[i] = g
			}
			if scale != 1 {
				for j := range dw {
					dw[j] *= scale
				}
				for j := range db {
					db[j] *= scale
				}
			}
			grads[len(parts)], grads[len(parts)+1] = dw, db
			if masked {
				zero := arena.Get("xent.dmask", n*in)
				clear(zero)
				grads[len(vals)-1] = zero
			}
			return grads
		},
	}, inputs...)
}

// clearPadRows zeroes the rows of g (rows of width d) that are not in realRows, which is sorted.
func clearPadRows[T kernels.Float](g []T, d int, realRows []int) {
	next := 0
	for _, r := range realRows {
		clear(g[next*d : r*d])
		next = r + 1
	}
	clear(g[next*d:])
}

// Embed looks up rows of table (V, D) by the ids in *ids, shaped outShape (whose last axis is D and whose size
// is len(*ids)·D), and multiplies them by the dropout mask (outShape; nil: no dropout). The ids are read at run
// time, so a cached graph is reused for every batch of its shape.
//
//	out_i = table[ids_i] ⊙ mask_i;  dtable[v] = Σ_{i: ids_i = v} grad_i ⊙ mask_i
//
// The (V, D) table gradient lives in the arena under the table's name, so the cached graphs share one (a
// gradient node of their own would hold a whole table each), and the masking is part of the op, so no product
// node keeps a copy of the embeddings and of their gradient. A graph may hold one Embed per table, since the
// gradient's buffer is named after the table. The mask gets a zero gradient: it is an input, not a parameter.
func Embed[T kernels.Float](arena *kernels.Arena[T], table *G.Node, ids *[]int, mask *G.Node, outShape ...int) *G.Node {
	v, d := table.Shape()[0], table.Shape()[1]
	if outShape[len(outShape)-1] != d {
		panic(fmt.Sprintf("graph: Embed of %v table shaped %v", table.Shape(), outShape))
	}
	inputs := []*G.Node{table}
	masked := mask != nil
	if masked {
		if !mask.Shape().Eq(tensor.Shape(outShape)) {
			panic(fmt.Sprintf("graph: Embed mask %v, want %v", mask.Shape(), outShape))
		}
		inputs = append(inputs, mask)
	}
	size := tensor.Shape(outShape).TotalSize()
	name := table.Name()
	return Fused(FusedOp[T]{
		Name:  fmt.Sprintf("Embed(%s,%v,%v)", name, outShape, masked),
		Shape: tensor.Shape(outShape).Clone(),
		Forward: func(in [][]T, out []T) {
			kernels.Embed(in[0], *ids, d, out)
			if masked {
				kernels.MulSlice(out, in[1])
			}
		},
		Backward: func(in [][]T, grad []T) [][]T {
			dtable := arena.Get("embed.grad."+name, v*d)
			clear(dtable)
			if masked { // forward: out = table[ids] ⊙ mask
				dOut := arena.Get("embed.dout."+name, size)
				copy(dOut, grad)
				kernels.MulSlice(dOut, in[1])
				grad = dOut
			}
			kernels.EmbedBackward(dtable, *ids, d, grad)
			if !masked {
				return [][]T{dtable}
			}
			zero := arena.Get("embed.dmask."+name, size)
			clear(zero)
			return [][]T{dtable, zero}
		},
	}, inputs...)
}

// backwardOnce runs a fused op's whole backward pass at most once per forward run, however many of its
// per-input gradient nodes ask for it.
type backwardOnce[T kernels.Float] struct {
	forwardRuns, backwardRuns int
	run                       func(grad []T)
}

func (b *backwardOnce[T]) ensure(grad []T) {
	if b.backwardRuns != b.forwardRuns {
		b.run(grad)
		b.backwardRuns = b.forwardRuns
	}
}

// sharedGrad is the gradient of one input of a fused op with several inputs: it runs the op's backward pass
// (once per run) with the incoming gradient and views that input's part of the result.
func sharedGrad[T kernels.Float](name string, input, output, grad *G.Node, once *backwardOnce[T], stored func() []T) *G.Node {
	return viewGrad(name, input, output, grad, func(g []T) []T {
		once.ensure(g)
		return stored()
	})
}

// FusedOp is an op with several inputs whose backward pass computes the gradients of all of them at once: a
// fused layer such as the encoder's LSTM direction or the teacher-forced decoder loop.
type FusedOp[T kernels.Float] struct {
	// Name identifies the op and all its parameters (sizes, options); it is the node hash, so it must be
	// unique per behaviour within a graph, and holds no addresses (see the package comment).
	Name  string
	Shape tensor.Shape // of the output
	// Forward writes the output from the inputs' values.
	Forward func(in [][]T, out []T)
	// Backward returns the gradient of every input, in order, given the output gradient: memory the op owns
	// (its arena), which stays valid until the next Forward. It reads the inputs of the last Forward and runs
	// once per forward run, however many inputs need their gradient.
	Backward func(in [][]T, grad []T) [][]T
}

// Fused adds op to the graph with the given inputs.
func Fused[T kernels.Float](op FusedOp[T], inputs ...*G.Node) *G.Node {
	inDims := make([]int, len(inputs))
	for i, n := range inputs {
		inDims[i] = n.Dims()
	}
	var saved, grads [][]T // the inputs of the last forward run; the gradients of the last backward run
	once := &backwardOnce[T]{}
	k := newOp(op.Name, op.Shape, inDims, func(vals [][]T, out []T) {
		saved = vals
		op.Forward(vals, out)
		once.forwardRuns++
	})
	once.run = func(g []T) { grads = op.Backward(saved, g) }
	k.backward = func(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		out := make(G.Nodes, len(in))
		for i := range in {
			out[i] = sharedGrad(fmt.Sprintf("%sGrad%d", op.Name, i), in[i], output, grad, once, func() []T { return grads[i] })
		}
		return out, nil
	}
	return apply(k, inputs...)
}
