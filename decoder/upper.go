package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// upperOp is one decoder layer above the first over every step of a batch, as one graph op: x (T·B, H+M) holds
// rows [h_below_t ; c_t] in time-major order (the fused decoder's output, or the layer below's); the output has
// the same shape with rows [h_t ; c_t], h_t the new layer's state. The layer is an LSTM from a zero state over
// x ⊙ mask (mask (T·B, H+M), nil for no dropout); c_t is passed on unmasked. Positions past a row's target
// length are computed like the others: their loss is masked, so their gradient is 0.
func upperOp[T kernels.Float](arena *kernels.Arena[T], x, mask, inputW, hiddenW, bias *G.Node, steps, layer int) *G.Node {
	n, width := x.Shape()[0], x.Shape()[1]
	rows, hid := n/steps, hiddenW.Shape()[1]
	prefix := fmt.Sprintf("dec.l%d", layer)
	seq := encoder.NewLSTMSeq[T](steps, rows, width, hid, false, arena, prefix+".lstm")
	lengths := make([]int, rows)
	for r := range lengths {
		lengths[r] = steps
	}
	inputs := []*G.Node{x, inputW, hiddenW, bias}
	if mask != nil {
		inputs = append(inputs, mask)
	}
	// in returns the LSTM's input, x ⊙ mask, computed by the last Forward.
	in := func(v [][]T) []T {
		if mask == nil {
			return v[0]
		}
		return arena.Get(prefix+".in", n*width)
	}
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("DecoderUpperLSTM(%d,%d,%d,%d,%d,%v)", layer, steps, rows, width, hid, mask != nil),
		Shape: tensor.Shape{n, width},
		Forward: func(v [][]T, out []T) {
			xin := in(v)
			if mask != nil {
				copy(xin, v[0])
				kernels.MulSlice(xin, v[4])
			}
			states := arena.Get(prefix+".states", n*hid)
			seq.Forward(xin, v[1], v[2], v[3], lengths, states, arena.Get(prefix+".finalH", rows*hid), arena.Get(prefix+".finalC", rows*hid))
			for i := 0; i < n; i++ {
				row := out[i*width : (i+1)*width]
				copy(row[:hid], states[i*hid:(i+1)*hid])
				copy(row[hid:], v[0][i*width+hid:(i+1)*width])
			}
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(inputs))
			for i, node := range inputs {
				grads[i] = arena.Get(fmt.Sprintf("%s.grad%d", prefix, i), node.Shape().TotalSize())
				if i > 0 {
					clear(grads[i])
				}
			}
			dStates := arena.Get(prefix+".dStates", n*hid)
			for i := 0; i < n; i++ {
				copy(dStates[i*hid:(i+1)*hid], g[i*width:i*width+hid])
			}
			// The final states reach nothing: their gradient is 0.
			dFinal := arena.Get(prefix+".dFinal", rows*hid)
			clear(dFinal)
			dx := grads[0]
			seq.Backward(in(v), v[1], v[2], lengths, dStates, dFinal, dFinal, dx, grads[1], grads[2], grads[3])
			if mask != nil {
				kernels.MulSlice(dx, v[4])
			}
			// c_t went straight through to the output.
			for i := 0; i < n; i++ {
				row := dx[i*width+hid : (i+1)*width]
				for j, d := range g[i*width+hid : (i+1)*width] {
					row[j] += d
				}
			}
			return grads
		},
	}, inputs...)
}
