package kernels

import "math"

// LayerNormEps is added to the variance before the inverse square root, as PyTorch's LayerNorm does.
const LayerNormEps = 1e-5

// LayerNorm is out = (x − mean) · rstd · gain + bias over each row of x (n, d), with rstd = 1/√(var + ε)
// (ε = LayerNormEps); it keeps mean and rstd (n) for the backward pass. Sums are taken in float64.
func LayerNorm[T Float](out, mean, rstd, x, gain, bias []T, n, d int) {
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		var m float64
		for _, v := range row {
			m += float64(v)
		}
		m /= float64(d)
		var vr float64
		for _, v := range row {
			vr += (float64(v) - m) * (float64(v) - m)
		}
		s := 1 / math.Sqrt(vr/float64(d)+LayerNormEps)
		mean[r], rstd[r] = T(m), T(s)
		o := out[r*d : (r+1)*d]
		for j, v := range row {
			o[j] = T((float64(v)-m)*s)*gain[j] + bias[j]
		}
	}
}

// LayerNormBackward writes dx (n, d) and adds into dGain and dBias, given dOut and what LayerNorm kept: with
// x̂ = (x − mean)·rstd, dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) where dx̂ = dOut ⊙ gain.
func LayerNormBackward[T Float](dx, dGain, dBias, dOut, x, mean, rstd, gain []T, n, d int) {
	for r := 0; r < n; r++ {
		row, g, o := x[r*d:(r+1)*d], dOut[r*d:(r+1)*d], dx[r*d:(r+1)*d]
		m, s := float64(mean[r]), float64(rstd[r])
		var meanD, meanDX float64
		for j, v := range row {
			xh := (float64(v) - m) * s
			dxh := float64(g[j]) * float64(gain[j])
			meanD += dxh
			meanDX += dxh * xh
			dBias[j] += g[j]
			dGain[j] += T(xh) * g[j]
		}
		meanD /= float64(d)
		meanDX /= float64(d)
		for j, v := range row {
			xh := (float64(v) - m) * s
			dxh := float64(g[j]) * float64(gain[j])
			o[j] = T(s * (dxh - meanD - xh*meanDX))
		}
	}
}
