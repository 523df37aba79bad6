package encoder

import (
	"fmt"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fusedLSTM is one direction of the encoder's LSTM over a whole batch as one graph op (LSTMSeq): x
// (steps, rows, In) embeddings, inputW (4, In, H), hiddenW (4, H, H), bias (4, H). The output is
// (steps+2, rows, H): the state after each position, then the final hidden state, then the final cell state.
func fusedLSTM[T kernels.Float](arena *kernels.Arena[T], x, inputW, hiddenW, bias *G.Node, lengths *[]int, reverse bool) *G.Node {
	steps, rows, in := x.Shape()[0], x.Shape()[1], x.Shape()[2]
	hid := hiddenW.Shape()[1]
	prefix := fmt.Sprintf("enc%v", reverse)
	seq := NewLSTMSeq[T](steps, rows, in, hid, reverse, arena, prefix)
	sizes := []int{steps * rows * in, 4 * in * hid, 4 * hid * hid, 4 * hid}
	n := steps * rows * hid
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("EncoderLSTM(%p,%v,%d,%d,%d,%d)", lengths, reverse, steps, rows, in, hid),
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
