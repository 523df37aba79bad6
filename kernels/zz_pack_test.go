package kernels

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkZZPack(b *testing.B) {
	const in, v, lo, hi = 640, 5898, 2944, 5898
	w := normals(rand.New(rand.NewPCG(1, 2)), in*v, 0.04)
	for _, tr := range []bool{false, true} {
		name := "w"
		if tr {
			name = "wt"
		}
		b.Run(name, func(b *testing.B) {
			var q amxPack
			for range b.N {
				q.current = false
				if tr {
					q.ensure(w[lo:], hi-lo, in, 1, v, true)
				} else {
					q.ensure(w[lo:], in, hi-lo, v, 1, true)
				}
			}
		})
	}
	b.Run("full-w", func(b *testing.B) {
		var q amxPack
		for range b.N {
			q.current = false
			q.ensure(w, in, v, v, 1, true)
		}
	})
	b.Run("full-wt", func(b *testing.B) {
		var q amxPack
		for range b.N {
			q.current = false
			q.ensure(w, v, in, 1, v, true)
		}
	})
}
