package wordalign

import "math"

// The diagonal prior of fast_align (Dyer, Chahuneau and Smith 2013), in its code's letters: target word i of m
// (1-based) is aligned to source word j of n (1-based) with probability
//
//	p(a_i = j) = (1 − p0) · exp(λ·h(i, j, m, n)) / Z_λ(i, m, n),   h(i, j, m, n) = −|j/n − i/m|,
//
// and to the empty word with probability p0. The tension λ sets how sharply the links gather around the
// diagonal j/n = i/m; Z is the sum of exp(λ·h) over j = 1…n.

// feature is h(i, j, m, n) = −|j/n − i/m|: how far source position j of n lies from the diagonal at target
// position i of m, 0 on it.
func feature(i, j, m, n int) float64 {
	return -math.Abs(float64(j)/float64(n) - float64(i)/float64(m))
}

// diagonalZ is Z_λ(i, m, n) = Σ_{j=1…n} exp(λ·h(i, j, m, n)), in constant time as fast_align's
// DiagonalAlignment::ComputeZ computes it: the source positions past the diagonal point i·n/m and those at or
// before it each form a geometric series with ratio exp(−λ/n). It is 0 for n = 0. λ must be positive.
func diagonalZ(i, m, n int, lambda float64) float64 {
	if n == 0 {
		return 0
	}
	floor := int(float64(i) * float64(n) / float64(m)) // the last position at or before the diagonal point
	step := -lambda / float64(n)                       // log of the ratio between neighbouring terms
	z := 0.0
	if top := n - floor; top > 0 { // j = floor+1 … n, falling away from the diagonal
		z += math.Exp(lambda*feature(i, floor+1, m, n)) * -math.Expm1(float64(top)*step) / -math.Expm1(step)
	}
	if floor > 0 { // j = floor … 1
		z += math.Exp(lambda*feature(i, floor, m, n)) * -math.Expm1(float64(floor)*step) / -math.Expm1(step)
	}
	return z
}

// featureSum is Σ_{j=1…n} h(i, j, m, n)·exp(λ·h(i, j, m, n)), so that featureSum / diagonalZ is
// d/dλ log Z_λ(i, m, n), the feature's mean under the prior. Each geometric series of diagonalZ becomes an
// arithmetico-geometric one, the feature falling by 1/n from term to term. It is 0 for n = 0.
func featureSum(i, m, n int, lambda float64) float64 {
	if n == 0 {
		return 0
	}
	floor := int(float64(i) * float64(n) / float64(m))
	step := -lambda / float64(n)
	d := -1 / float64(n)
	sum := 0.0
	if top := n - floor; top > 0 {
		a := feature(i, floor+1, m, n)
		sum += arithmeticoGeometric(a, math.Exp(lambda*a), step, d, top)
	}
	if floor > 0 {
		a := feature(i, floor, m, n)
		sum += arithmeticoGeometric(a, math.Exp(lambda*a), step, d, floor)
	}
	return sum
}

// arithmeticoGeometric is Σ_{k=0…count−1} (a + k·d)·g·r^k with r = exp(step) < 1.
func arithmeticoGeometric(a, g, step, d float64, count int) float64 {
	// With S the sum, S − r·S = a·g + d·g·(r − r^count)/(1 − r) − (a + (count−1)·d)·g·r^count. The differences
	// of powers of r are taken with Expm1, which keeps their digits when r is near 1.
	oneMinusR := -math.Expm1(step)
	rMinusRn := math.Exp(step) * -math.Expm1(float64(count-1)*step)
	last := a + float64(count-1)*d
	return (a*g + d*g*rMinusRn/oneMinusR - last*g*math.Exp(float64(count)*step)) / oneMinusR
}

// swappedZ is the normalizer fast_align's ComputeDLogZ(i, m, n, λ) divides featureSum by: ComputeZ(i, n, m, λ),
// the two lengths swapped. When the diagonal point i·m/n then lies past the last position m, the count of the
// positions past it, unsigned in fast_align, wraps around, and the series past the point runs on without end:
// exp(λ·h(i, ⌊i·m/n⌋+1, n, m)) / (1 − exp(−λ/m)). It is 0 for n = 0.
func swappedZ(i, m, n int, lambda float64) float64 {
	if n == 0 {
		return 0
	}
	z := diagonalZ(i, n, m, lambda)
	if floor := int(float64(i) * float64(m) / float64(n)); floor > m {
		z += math.Exp(lambda*feature(i, floor+1, n, m)) / -math.Expm1(-lambda/float64(m))
	}
	return z
}
