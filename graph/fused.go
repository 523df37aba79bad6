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
	shape := input.Shape().Clone()
	op := &viewOp[T]{k: &kernelOp[T]{
		name:    name,
		inDims:  []int{output.Dims(), g.Dims()},
		outDims: len(shape),
		shape:   func([]tensor.Shape) tensor.Shape { return shape.Clone() },
	}, view: func(in [][]T) []T { return view(in[1]) }}
	n, err := G.ApplyOp(op, output, g)
	if err != nil {
		panic(fmt.Sprintf("graph: applying %s: %v", name, err))
	}
	return n
}

// scaledGrad is the gradient of a fused loss op whose forward pass already wrote the gradient for an incoming
// gradient of 1 into stored: stored, scaled in place by the actual (scalar) incoming gradient.
func scaledGrad[T kernels.Float](name string, input, output, g *G.Node, stored func() []T) *G.Node {
	return viewGrad(name, input, output, g, func(g []T) []T {
		data := stored()
		if scale := g[0]; scale != 1 {
			for i := range data {
				data[i] *= scale
			}
		}
		return data
	})
}

// OutputXent is the output layer, log-softmax and cross-entropy as one op: the summed loss of the rows of
// x (N, In) · w (In, V) + b (V) against *targets with label smoothing ε (0: none), ignoring rows whose target
// is pad. Its forward pass also computes every gradient (kernels.OutputXent), chunk by chunk, so no (N, V)
// matrix is ever kept.
func OutputXent[T kernels.Float](arena *kernels.Arena[T], x, w, b *G.Node, targets *[]int, pad int, smoothing float64) *G.Node {
	n, in, v := x.Shape()[0], x.Shape()[1], w.Shape()[1]
	const chunk = 1024
	var dx, dw, db []T
	op := &kernelOp[T]{
		name:    fmt.Sprintf("OutputXent(%p,%d,%d,%d)", targets, n, in, v),
		inDims:  []int{2, 2, 1},
		outDims: 0,
		shape:   func([]tensor.Shape) tensor.Shape { return tensor.ScalarShape() },
		forward: func(vals [][]T, _ []tensor.Shape, out []T) {
			dx, dw, db = arena.Get("xent.dx", n*in), arena.Get("xent.dw", in*v), arena.Get("xent.db", v)
			scratch := arena.Get("xent.logits", min(chunk, n)*v)
			out[0] = T(kernels.OutputXent(vals[0], vals[1], vals[2], *targets, pad, n, in, v, chunk, smoothing, dx, dw, db, scratch))
		},
	}
	op.backward = func(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		stored := []func() []T{func() []T { return dx }, func() []T { return dw }, func() []T { return db }}
		grads := make(G.Nodes, 3)
		for i := range grads {
			grads[i] = scaledGrad[T](fmt.Sprintf("OutputXentGrad(%p,%d)", targets, i), inputs[i], output, grad, stored[i])
		}
		return grads, nil
	}
	return apply(op, x, w, b)
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

// EncoderLSTM is one direction of the encoder's LSTM over a whole batch as one op (kernels.LSTMSeq): x
// (steps, rows, In) embeddings, inputW (4, In, H), hiddenW (4, H, H), bias (4, H). The output is
// (steps+2, rows, H): the state after each position, then the final hidden state, then the final cell state.
func EncoderLSTM[T kernels.Float](arena *kernels.Arena[T], x, inputW, hiddenW, bias *G.Node, lengths *[]int, reverse bool) *G.Node {
	steps, rows, in := x.Shape()[0], x.Shape()[1], x.Shape()[2]
	hid := hiddenW.Shape()[1]
	prefix := fmt.Sprintf("enc%v", reverse)
	seq := kernels.NewLSTMSeq[T](steps, rows, in, hid, reverse, arena, prefix)
	sizes := []int{steps * rows * in, 4 * in * hid, 4 * hid * hid, 4 * hid}
	grads := make([][]T, len(sizes))
	var saved [][]T // the inputs of the last forward run
	once := &backwardOnce[T]{}
	op := &kernelOp[T]{
		name:    fmt.Sprintf("EncoderLSTM(%p,%v,%d,%d,%d,%d)", lengths, reverse, steps, rows, in, hid),
		inDims:  []int{3, 3, 3, 2},
		outDims: 3,
		shape:   func([]tensor.Shape) tensor.Shape { return tensor.Shape{steps + 2, rows, hid} },
		forward: func(vals [][]T, _ []tensor.Shape, out []T) {
			saved = vals
			n := steps * rows * hid
			seq.Forward(vals[0], vals[1], vals[2], vals[3], *lengths, out[:n], out[n:n+rows*hid], out[n+rows*hid:])
			once.forwardRuns++
		},
	}
	once.run = func(g []T) {
		for i, size := range sizes {
			grads[i] = arena.Get(fmt.Sprintf("%s.grad%d", prefix, i), size)
		}
		for _, d := range grads[1:] {
			clear(d)
		}
		n := steps * rows * hid
		seq.Backward(saved[0], saved[1], saved[2], *lengths, g[:n], g[n:n+rows*hid], g[n+rows*hid:],
			grads[0], grads[1], grads[2], grads[3])
	}
	op.backward = func(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		out := make(G.Nodes, len(inputs))
		for i := range inputs {
			i := i
			out[i] = sharedGrad(fmt.Sprintf("EncoderLSTMGrad(%p,%v,%d)", lengths, reverse, i), inputs[i], output, grad, once, func() []T { return grads[i] })
		}
		return out, nil
	}
	return apply(op, x, inputW, hiddenW, bias)
}

// SplitEncoderOutput turns an EncoderLSTM output (steps+2, rows, H) into the batch-major states (rows, steps, H)
// and the final hidden and cell states (rows, H).
func SplitEncoderOutput[T kernels.Float](packed *G.Node) (states, finalH, finalC *G.Node) {
	steps := packed.Shape()[0] - 2
	rows, hid := packed.Shape()[1], packed.Shape()[2]
	packedShape := packed.Shape().Clone()
	op := &kernelOp[T]{
		name:    fmt.Sprintf("TimeToBatchMajor(%v)", packedShape),
		inDims:  []int{3},
		outDims: 3,
		shape:   func([]tensor.Shape) tensor.Shape { return tensor.Shape{rows, steps, hid} },
		forward: func(in [][]T, _ []tensor.Shape, out []T) {
			for t := 0; t < steps; t++ {
				for r := 0; r < rows; r++ {
					copy(out[(r*steps+t)*hid:(r*steps+t+1)*hid], in[0][(t*rows+r)*hid:(t*rows+r+1)*hid])
				}
			}
		},
	}
	op.backward = func(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		gop := &kernelOp[T]{
			name:    fmt.Sprintf("BatchToTimeMajor(%v)", packedShape),
			inDims:  []int{3},
			outDims: 3,
			shape:   func([]tensor.Shape) tensor.Shape { return packedShape.Clone() },
			forward: func(in [][]T, _ []tensor.Shape, out []T) {
				clear(out[steps*rows*hid:])
				for t := 0; t < steps; t++ {
					for r := 0; r < rows; r++ {
						copy(out[(t*rows+r)*hid:(t*rows+r+1)*hid], in[0][(r*steps+t)*hid:(r*steps+t+1)*hid])
					}
				}
			},
		}
		return G.Nodes{apply(gop, grad)}, nil
	}
	return apply(op, packed), Select[T](packed, steps), Select[T](packed, steps+1)
}

// DecoderLSTM is the teacher-forced decoder over a whole batch as one op (kernels.DecoderSeq). Inputs, in order:
// emb (T, B, E); the packed encoder outputs of each direction (S+2, B, M/2) from EncoderLSTM; the bridge weights
// bridge.h.w, bridge.h.b, bridge.c.w, bridge.c.b; the attention weights attn.w_h, attn.w_s, attn.b_s, attn.v; the
// cell weights dec.w_ih (4, E+M, H), dec.w_hh (4, H, H), dec.b (4, H). Output: (T·B, H+M), each row [s_t ; c_t].
func DecoderLSTM[T kernels.Float](arena *kernels.Arena[T], inputs []*G.Node, lengths *[]int) *G.Node {
	if len(inputs) != 14 {
		panic(fmt.Sprintf("graph: DecoderLSTM needs 14 inputs, got %d", len(inputs)))
	}
	emb, fwd := inputs[0].Shape(), inputs[1].Shape()
	steps, rows, e := emb[0], emb[1], emb[2]
	srcLen, mem := fwd[0]-2, 2*fwd[2]
	hid, attn := inputs[12].Shape()[1], inputs[9].Shape()[0]
	seq := kernels.NewDecoderSeq[T](steps, rows, srcLen, e, mem, hid, attn, arena, "dec")
	grads := make([][]T, len(inputs))
	inDims := make([]int, len(inputs))
	for i, n := range inputs {
		inDims[i] = n.Dims()
	}
	weights := func(v [][]T) kernels.DecoderWeights[T] {
		return kernels.DecoderWeights[T]{BridgeHW: v[3], BridgeHB: v[4], BridgeCW: v[5], BridgeCB: v[6],
			MemW: v[7], QueryW: v[8], QueryB: v[9], V: v[10], InputW: v[11], HiddenW: v[12], Bias: v[13]}
	}
	var saved [][]T
	once := &backwardOnce[T]{}
	name := fmt.Sprintf("DecoderLSTM(%p,%d,%d,%d,%d,%d,%d,%d)", lengths, steps, rows, srcLen, e, mem, hid, attn)
	op := &kernelOp[T]{
		name:    name,
		inDims:  inDims,
		outDims: 2,
		shape:   func([]tensor.Shape) tensor.Shape { return tensor.Shape{steps * rows, hid + mem} },
		forward: func(vals [][]T, _ []tensor.Shape, out []T) {
			saved = vals
			seq.Lengths = *lengths
			seq.Forward(vals[0], vals[1], vals[2], weights(vals), out)
			once.forwardRuns++
		},
	}
	once.run = func(g []T) {
		for i, n := range inputs {
			grads[i] = arena.Get(fmt.Sprintf("dec.grad%d", i), n.Shape().TotalSize())
		}
		for _, d := range grads[3:] {
			clear(d)
		}
		seq.Backward(saved[0], weights(saved), g, grads[0], grads[1], grads[2], weights(grads))
	}
	op.backward = func(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
		out := make(G.Nodes, len(in))
		for i := range in {
			i := i
			out[i] = sharedGrad(fmt.Sprintf("%sGrad%d", name, i), in[i], output, grad, once, func() []T { return grads[i] })
		}
		return out, nil
	}
	return apply(op, inputs...)
}
