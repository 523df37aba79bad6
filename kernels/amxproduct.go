package kernels

import "fmt"

// AMXProduct is one goroutine's float32 products c += aᵀ·b on Intel AMX's tile registers, both operands rounded
// or split afresh for each product, as a recurrent layer's weight gradients take them over all its steps at once
// (dW += xᵀ·dG). Its terms are rounded to bfloat16 or, split (bfloat16x3), held as two bfloat16s each and summed
// hi·hi + hi·lo + lo·hi (see AMXOutput), in float32. Its storage grows to the largest operands and stays.
//
// A layer whose gradient is several products by one right operand, a block of columns of b for each gate's
// block of W, rounds b once (RoundB) and each left operand once (RoundA) and adds each block with AddTo. The
// zero value rounds to bfloat16; Multiplier.AMXProduct hands out split ones where AMX runs.
type AMXProduct struct {
	split   bool
	a       amxA      // aᵀ (m, k), the left operand (RoundA)
	b       amxB      // b (k, n), the right operand (RoundB)
	partial []float32 // a block of columns not starting at a whole 32 of b (AddTo)
}

// RoundA rounds, or splits, aᵀ (m, k) as the left operand of the products that follow (AddTo): a is row-major
// (k, m) with leading dimension lda. a must hold no NaN.
func (p *AMXProduct) RoundA(m, k int, a []float32, lda int) {
	if m > 0 && k > 0 && (lda < m || len(a) < (k-1)*lda+m) {
		panic(fmt.Sprintf("kernels: AMXProduct.RoundA of %d values, lda %d, for (%d, %d)ᵀ", len(a), lda, k, m))
	}
	p.a.fit(m, k, p.split)
	p.a.round(a, 1, lda)
}

// RoundB rounds, or splits, b (k, n) as the right operand of the products that follow (AddTo): b is row-major
// with leading dimension ldb. b must hold no NaN.
func (p *AMXProduct) RoundB(n, k int, b []float32, ldb int) {
	if n > 0 && k > 0 && (ldb < n || len(b) < (k-1)*ldb+n) {
		panic(fmt.Sprintf("kernels: AMXProduct.RoundB of %d values, ldb %d, for (%d, %d)", len(b), ldb, k, n))
	}
	p.b.fit(k, n, p.split)
	p.b.round(b, ldb, 1)
}

// AddTo adds columns [j0, j1) of aᵀ·b, the operands of the last RoundA and RoundB, to c (m, j1−j0) with leading
// dimension ldc, leaving c's other values alone. A block that starts at a whole 32 columns of b multiplies b's
// packed columns where they lie; another is computed from the whole 32 before it into scratch and added.
func (p *AMXProduct) AddTo(j0, j1 int, c []float32, ldc int) {
	if j0 < 0 || j1 > p.b.n || j0 > j1 || p.a.k != p.b.k {
		panic(fmt.Sprintf("kernels: AMXProduct.AddTo of columns [%d, %d) of (%d, %d)ᵀ by (%d, %d)", j0, j1, p.a.k, p.a.m, p.b.k, p.b.n))
	}
	from := j0 / amxBlock * amxBlock
	b := p.b.columns(from, j1)
	if from == j0 {
		mustAMX(amxMul(&p.a, &b, c, ldc, true))
		return
	}
	n, skip := j1-from, j0-from
	if cap(p.partial) < p.a.m*n {
		p.partial = make([]float32, p.a.m*n)
	}
	t := p.partial[:p.a.m*n]
	mustAMX(amxMul(&p.a, &b, t, n, false))
	for i := 0; i < p.a.m; i++ {
		row := c[i*ldc : i*ldc+j1-j0]
		for j, v := range t[i*n+skip : (i+1)*n] {
			row[j] += v
		}
	}
}

// columns returns the amxB of b's columns [from, to), from a whole 32, sharing b's storage: its panels are b's
// from column from on, and its padding columns, up to a whole 32, b's columns past to (or b's own padding), which
// amxMul sums into its edge buffers only.
func (b *amxB) columns(from, to int) amxB {
	v := *b
	v.n, v.np = to-from, amxRoundUp(to-from)
	v.data = b.data[from*b.kp/2 : from*b.kp/2+v.np*b.kp/2]
	return v
}
