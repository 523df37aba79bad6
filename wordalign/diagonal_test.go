package wordalign

import (
	"math"
	"testing"
)

// bruteZ is Z_λ(i, m, n) summed term by term.
func bruteZ(i, m, n int, lambda float64) float64 {
	z := 0.0
	for j := 1; j <= n; j++ {
		z += math.Exp(lambda * feature(i, j, m, n))
	}
	return z
}

// bruteFeatureSum is Σ_j h·exp(λh) summed term by term.
func bruteFeatureSum(i, m, n int, lambda float64) float64 {
	s := 0.0
	for j := 1; j <= n; j++ {
		h := feature(i, j, m, n)
		s += h * math.Exp(lambda*h)
	}
	return s
}

// fastAlignComputeZ transcribes fast_align's DiagonalAlignment::ComputeZ(i, m, n, λ) as a loop over the
// positions it sums, its unsigned count of the positions past the diagonal point included: when that count
// wraps around, the loop runs on (here until the terms stop mattering).
func fastAlignComputeZ(i, m, n int, lambda float64) float64 {
	floor := int(float64(i) * float64(n) / float64(m))
	z := 0.0
	for j := floor; j >= 1; j-- {
		z += math.Exp(lambda * feature(i, j, m, n))
	}
	if top := n - floor; top >= 0 {
		for j := floor + 1; j <= floor+top; j++ {
			z += math.Exp(lambda * feature(i, j, m, n))
		}
		return z
	}
	for j := floor + 1; ; j++ {
		term := math.Exp(lambda * feature(i, j, m, n))
		z += term
		if term < 1e-18*z {
			return z
		}
	}
}

func TestDiagonalNormalizerMatchesBruteForce(t *testing.T) {
	const tol = 1e-12
	for _, lambda := range []float64{0.1, 1, 4, 7.3, 14} {
		for _, mn := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {3, 7}, {7, 3}, {10, 10}, {12, 40}, {40, 13}, {100, 1}} {
			m, n := mn[0], mn[1]
			for i := 1; i <= m; i++ {
				want := bruteZ(i, m, n, lambda)
				if got := diagonalZ(i, m, n, lambda); math.Abs(got-want) > tol*want {
					t.Errorf("Z(i=%d, m=%d, n=%d, λ=%g) = %.17g, brute force %.17g", i, m, n, lambda, got, want)
				}
				wantSum := bruteFeatureSum(i, m, n, lambda)
				if got := featureSum(i, m, n, lambda); math.Abs(got-wantSum) > 1e-10*math.Max(math.Abs(wantSum), 1e-3) {
					t.Errorf("Σh·exp(λh) (i=%d, m=%d, n=%d, λ=%g) = %.17g, brute force %.17g", i, m, n, lambda, got, wantSum)
				}
				wantSwapped := fastAlignComputeZ(i, n, m, lambda)
				if got := swappedZ(i, m, n, lambda); math.Abs(got-wantSwapped) > 1e-9*wantSwapped {
					t.Errorf("fast_align's swapped Z (i=%d, m=%d, n=%d, λ=%g) = %.17g, its loop %.17g", i, m, n, lambda, got, wantSwapped)
				}
			}
		}
	}
	if z := diagonalZ(1, 3, 0, 4); z != 0 {
		t.Errorf("Z of an empty source = %g, want 0", z)
	}
}

// The prior mean featureSum/Z is d/dλ log Z: compare it with a central difference.
func TestFeatureMeanIsDLogZ(t *testing.T) {
	const h = 1e-6
	for _, c := range [][4]float64{{1, 4, 6, 4}, {3, 4, 6, 0.5}, {7, 9, 20, 10}} {
		i, m, n, lambda := int(c[0]), int(c[1]), int(c[2]), c[3]
		fd := (math.Log(diagonalZ(i, m, n, lambda+h)) - math.Log(diagonalZ(i, m, n, lambda-h))) / (2 * h)
		if got := featureSum(i, m, n, lambda) / diagonalZ(i, m, n, lambda); math.Abs(got-fd) > 1e-7 {
			t.Errorf("i=%d m=%d n=%d λ=%g: mean feature %.10g, d log Z / dλ %.10g", i, m, n, lambda, got, fd)
		}
	}
}
