package kernels

import "fmt"

// AMXGemm is one goroutine's float32 products on Intel AMX's tile registers by one weight matrix packed once
// for many products: c = x·w or c += x·w for row-major x (m, k), as a recurrent layer multiplies its weights at
// every step. Its terms are rounded to bfloat16 or, split (bfloat16x3), held as two bfloat16s each and summed
// hi·hi + hi·lo + lo·hi (see AMXOutput), in float32. Its storage grows to the largest operands and stays.
//
// The zero value packs weights of its own; it must be used only where AMX runs. An AMXGemm of training's
// workers (Multiplier.AMXGemm) shares its packing of the weights with the other workers':
// the first Pack after WeightsChanged packs them, and the others find them packed.
type AMXGemm struct {
	w      amxB     // the packed weights, (k, n), of an AMXGemm of its own
	shared *amxPack // the packing shared with other workers' AMXGemms of the same name, or nil
	x      amxA     // the left operand of the last product
}

// Pack rounds, or splits, and packs the weights (k, n) for Mul: w is row-major (k, n), or with transposed the
// row-major (n, k) matrix whose transpose they are. w must hold no NaN. Where the packing is shared between
// workers (Multiplier.AMXGemm), only the first Pack after WeightsChanged reads w, so every worker's w must hold the
// same weights.
func (g *AMXGemm) Pack(w []float32, k, n int, transposed, split bool) {
	if len(w) < k*n {
		panic(fmt.Sprintf("kernels: AMXGemm.Pack of %d values for (%d, %d)", len(w), k, n))
	}
	b := &g.w
	if q := g.shared; q != nil {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.current && q.b.is(k, n, split) {
			return // packed by another worker since the weights last changed
		}
		b, q.current = &q.b, true
	}
	b.fit(k, n, split)
	if transposed {
		b.round(w, 1, k)
	} else {
		b.round(w, n, 1)
	}
}

// weights are the packed weights that Mul multiplies by.
func (g *AMXGemm) weights() *amxB {
	if g.shared != nil {
		return &g.shared.b
	}
	return &g.w
}

// Mul sets c[i*ldc+j] to the float32 sum over k of x[i*ldx+k]·w[k][j] for i < m and j < n, the terms rounded or
// split as Pack's, or with add adds that sum to c, leaving c's other values alone.
func (g *AMXGemm) Mul(x []float32, m, ldx int, c []float32, ldc int, add bool) {
	w := g.weights()
	k := w.k
	if m > 0 && (ldx < k || len(x) < (m-1)*ldx+k) {
		panic(fmt.Sprintf("kernels: AMXGemm.Mul of %d values, ldx %d, for (%d, %d)", len(x), ldx, m, k))
	}
	g.x.fit(m, k, w.split)
	g.x.round(x, ldx, 1)
	if err := amxMul(&g.x, w, c, ldc, add); err != nil {
		panic(err)
	}
}
