package graph

import (
	"fmt"
	"testing"

	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// BenchmarkSumGrads times the reduction of a step of the small recipe with two workers: two graphs' gradients of
// 6.66 million float32 parameters (a 3.77 M output layer, two embeddings and a few dozen smaller tensors) summed
// into one set, with and without the per-block callback a norm uses.
func BenchmarkSumGrads(b *testing.B) {
	set := param.NewSet[float32]()
	sizes := []int{5898 * 640, 7882 * 128, 5898 * 128}
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 640*1024/20)
	}
	var tensors []*param.Tensor[float32]
	for i, n := range sizes {
		tensors = append(tensors, set.Add(fmt.Sprintf("t%d", i), n))
	}
	set.Pack()
	build := func() *Params[float32] {
		p := NewParams[float32](nil)
		var loss *G.Node
		for _, t := range tensors {
			term := G.Must(G.Sum(p.Whole(t)))
			if loss == nil {
				loss = term
			} else {
				loss = G.Must(G.Add(loss, term))
			}
		}
		if err := p.Differentiate(loss); err != nil {
			b.Fatal(err)
		}
		vm := G.NewTapeMachine(p.Graph)
		b.Cleanup(func() { vm.Close() })
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		return p
	}
	ps := []*Params[float32]{build(), build()}
	grads := set.ZerosLike()
	b.Run("sum", func(b *testing.B) {
		for b.Loop() {
			SumGrads(grads, 0.5, ps, 1<<15, nil)
		}
	})
	b.Run("sum+squares", func(b *testing.B) {
		sq := make([]float64, (set.Len()+1<<15-1)>>15)
		for b.Loop() {
			SumGrads(grads, 0.5, ps, 1<<15, func(k int, v []float32) {
				var s float64
				for _, x := range v {
					s += float64(x) * float64(x)
				}
				sq[k] = s
			})
		}
	})
}
