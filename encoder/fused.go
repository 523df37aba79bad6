package encoder

import (
	"fmt"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fusedDirection is one direction of one layer (from 1) of the encoder's recurrent layer over a whole batch as
// one graph op (recurrence): x (steps, rows, In) its input; the weights of d, bound to the graph. The output is
// (steps+2, rows, H): the state after each position, then the final hidden state, then the final cell state
// (a GRU's final hidden state again).
func fusedDirection[T kernels.Float](p *graph.Params[T], cell Cell, x *G.Node, d Direction[T], lengths *[]int, reverse bool, layer int) *G.Node {
	steps, rows, in := x.Shape()[0], x.Shape()[1], x.Shape()[2]
	hid := d.HiddenW.Shape[1]
	prefix := fmt.Sprintf("enc.l%d.%v", layer, reverse)
	rec := newRecurrence[T](cell, steps, rows, in, hid, reverse, p.Arena, p.Multiplier, prefix)
	var cache *recCache[T]
	inputs := []*G.Node{x, p.Whole(d.InputW), p.Whole(d.HiddenW), p.Whole(d.Bias)}
	if d.HiddenBias != nil {
		inputs = append(inputs, p.Whole(d.HiddenBias))
	}
	weights := func(v [][]T) dirWeights[T] {
		w := dirWeights[T]{inputW: v[1], hiddenW: v[2], bias: v[3]}
		if len(v) > 4 {
			w.hiddenBias = v[4]
		}
		return w
	}
	n := steps * rows * hid
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("EncoderDirection(%s,%v,%d,%d,%d,%d,%d)", cell, reverse, layer, steps, rows, in, hid),
		Shape: tensor.Shape{steps + 2, rows, hid},
		Forward: func(v [][]T, out []T) {
			cache = rec.newCache()
			rec.forward(weights(v), v[0], *lengths, out[:n], out[n:n+rows*hid], out[n+rows*hid:], cache)
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(inputs))
			for i, node := range inputs {
				grads[i] = p.Arena.Get(fmt.Sprintf("%s.grad%d", prefix, i), node.Shape().TotalSize())
				if i > 0 {
					clear(grads[i])
				}
			}
			rec.backward(weights(v), v[0], *lengths, cache, g[:n], g[n:n+rows*hid], g[n+rows*hid:], grads[0], weights(grads))
			return grads
		},
	}, inputs...)
}

// joinDirections is the input of an upper encoder layer as one graph op: from the two directions' packed outputs
// (steps+2, rows, H) of the layer below, the states [fwd ; bwd] at each position, (steps, rows, 2H) time-major,
// multiplied by the dropout mask (steps, rows, 2H) when mask is not nil. The final states of the layer below
// are left out (only the last layer's reach the decoder), so their gradient is 0.
func joinDirections[T kernels.Float](arena *kernels.Arena[T], fwd, bwd, mask *G.Node, layer int) *G.Node {
	steps, rows, hid := fwd.Shape()[0]-2, fwd.Shape()[1], fwd.Shape()[2]
	inputs := []*G.Node{fwd, bwd}
	if mask != nil {
		inputs = append(inputs, mask)
	}
	prefix := fmt.Sprintf("enc.l%d.join", layer)
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("JoinDirections(%d,%d,%d,%d,%v)", layer, steps, rows, hid, mask != nil),
		Shape: tensor.Shape{steps, rows, 2 * hid},
		Forward: func(v [][]T, out []T) {
			for i := 0; i < steps*rows; i++ {
				row := out[i*2*hid : (i+1)*2*hid]
				copy(row[:hid], v[0][i*hid:(i+1)*hid])
				copy(row[hid:], v[1][i*hid:(i+1)*hid])
				if mask != nil {
					kernels.MulSlice(row, v[2][i*2*hid:(i+1)*2*hid])
				}
			}
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(inputs))
			for i, n := range inputs {
				grads[i] = arena.Get(fmt.Sprintf("%s.grad%d", prefix, i), n.Shape().TotalSize())
			}
			for dir := 0; dir < 2; dir++ {
				d := grads[dir]
				clear(d[steps*rows*hid:]) // the final states
				for i := 0; i < steps*rows; i++ {
					dst := d[i*hid : (i+1)*hid]
					copy(dst, g[i*2*hid+dir*hid:][:hid])
					if mask != nil {
						kernels.MulSlice(dst, v[2][i*2*hid+dir*hid:][:hid])
					}
				}
			}
			if mask != nil {
				clear(grads[2]) // a mask is not learned
			}
			return grads
		},
	}, inputs...)
}
