package encoder

import (
	"fmt"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fusedLSTM is one direction of one layer (from 1) of the encoder's LSTM over a whole batch as one graph op (LSTMSeq): x
// (steps, rows, In) embeddings, inputW (4, In, H), hiddenW (4, H, H), bias (4, H). The output is
// (steps+2, rows, H): the state after each position, then the final hidden state, then the final cell state.
func fusedLSTM[T kernels.Float](arena *kernels.Arena[T], x, inputW, hiddenW, bias *G.Node, lengths *[]int, reverse bool, layer int) *G.Node {
	steps, rows, in := x.Shape()[0], x.Shape()[1], x.Shape()[2]
	hid := hiddenW.Shape()[1]
	prefix := fmt.Sprintf("enc%v", reverse)
	if layer > 1 {
		prefix = fmt.Sprintf("enc.l%d.%v", layer, reverse)
	}
	seq := NewLSTMSeq[T](steps, rows, in, hid, reverse, arena, prefix)
	sizes := []int{steps * rows * in, 4 * in * hid, 4 * hid * hid, 4 * hid}
	n := steps * rows * hid
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("EncoderLSTM(%v,%d,%d,%d,%d,%d)", reverse, layer, steps, rows, in, hid),
		Shape: tensor.Shape{steps + 2, rows, hid},
		Forward: func(v [][]T, out []T) {
			seq.Forward(v[0], v[1], v[2], v[3], *lengths, out[:n], out[n:n+rows*hid], out[n+rows*hid:])
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(sizes))
			for i, size := range sizes {
				grads[i] = arena.Get(fmt.Sprintf("%s.grad%d", prefix, i), size)
			}
			for _, d := range grads[1:] {
				clear(d)
			}
			seq.Backward(v[0], v[1], v[2], *lengths, g[:n], g[n:n+rows*hid], g[n+rows*hid:], grads[0], grads[1], grads[2], grads[3])
			return grads
		},
	}, x, inputW, hiddenW, bias)
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
