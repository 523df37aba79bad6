package kernels

import "math"

// AdamCoeffs are the constants of one Adam update in float32, worked out by the optimizer for its step t:
//
//	g ← Scale·g;  m ← Beta1·m + OneMinusBeta1·g;  v ← Beta2·v + OneMinusBeta2·g·g
//	w ← w − StepSize·m / (√v / SqrtC2 + Eps)
//
// with StepSize = lr/(1−β1^t) and SqrtC2 = √(1−β2^t), as PyTorch's Adam computes it. Scale folds gradient
// clipping into the update.
type AdamCoeffs struct {
	Scale, Beta1, Beta2, OneMinusBeta1, OneMinusBeta2, StepSize, SqrtC2, Eps float32
}

// AdamUpdate applies one Adam update to the weights w from the gradients g, updating the moments m and v in
// place; the four slices have one length. Every value is computed in float32 with each operation rounded in
// the order of AdamCoeffs' formula, eight at a time in AVX assembly where the CPU has AVX2, so the vector and
// scalar paths agree bit for bit.
func AdamUpdate(w, g, m, v []float32, c AdamCoeffs) {
	n := len(w)
	if len(g) != n || len(m) != n || len(v) != n {
		panic("kernels: AdamUpdate over slices of different lengths")
	}
	adamScalar(w, g, m, v, c, vectorAdam(w, g, m, v, &c))
}

// adamScalar is AdamUpdate's formula in Go for the values from index from on.
func adamScalar(w, g, m, v []float32, c AdamCoeffs, from int) {
	for j := from; j < len(w); j++ {
		gj := g[j] * c.Scale
		// The conversions round each product, as the assembly does: Go may otherwise fuse a*b + c.
		m[j] = float32(c.Beta1*m[j]) + float32(c.OneMinusBeta1*gj)
		v[j] = float32(c.Beta2*v[j]) + float32(float32(c.OneMinusBeta2*gj)*gj)
		denom := float32(math.Sqrt(float64(v[j])))/c.SqrtC2 + c.Eps
		w[j] -= float32(c.StepSize*m[j]) / denom
	}
}
