package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackedGemmMatchesInOrderSums checks PackedGemm on odd shapes, both packings, set and add, with rows of x
// and c longer than the product's: every value is the sum it promises bit for bit (blocks of packedBlock terms,
// each summed in order from zero with one rounding a term, as a fused multiply-add rounds, then added in order),
// within float32 summation of the float64 sum, and c's other values are left alone.
func TestPackedGemmMatchesInOrderSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type shape struct{ m, k, n int }
	var shapes []shape
	for _, m := range []int{1, 7, 8, 9, 37} {
		for _, k := range []int{1, 5, 96, 1100} {
			for _, n := range []int{1, 47, 48, 49, 100} {
				shapes = append(shapes, shape{m, k, n})
			}
		}
	}
	shapes = append(shapes, shape{32, 640, 1024}, shape{19, 2 * packedBlock, 50})
	var g PackedGemm // one PackedGemm for every shape: its storage is reused, larger and smaller
	for _, sh := range shapes {
		m, k, n := sh.m, sh.k, sh.n
		for _, transposed := range []bool{false, true} {
			for _, add := range []bool{false, true} {
				name := fmt.Sprintf("m%d k%d n%d transposed %v add %v", m, k, n, transposed, add)
				ldx, ldc := k+3, n+5
				x, w, c := normals(rng, m*ldx, 1), normals(rng, k*n, 1), normals(rng, m*ldc, 1)
				orig := append([]float32(nil), c...)
				packed := w
				if transposed { // the (n, k) matrix whose transpose is w
					packed = make([]float32, n*k)
					for i := range k {
						for j := range n {
							packed[j*k+i] = w[i*n+j]
						}
					}
				}
				g.Pack(packed, k, n, transposed)
				g.Mul(x, m, ldx, c, ldc, add)
				for r := range m {
					for j := range ldc {
						got := c[r*ldc+j]
						if j >= n {
							if math.Float32bits(got) != math.Float32bits(orig[r*ldc+j]) {
								t.Fatalf("%s: c[%d][%d] past n changed", name, r, j)
							}
							continue
						}
						want, exact, abs := float32(0), 0.0, 0.0
						if add {
							want, exact, abs = orig[r*ldc+j], float64(orig[r*ldc+j]), math.Abs(float64(orig[r*ldc+j]))
						}
						for k0 := 0; k0 < k; k0 += packedBlock {
							var sum float32
							for i := k0; i < min(k0+packedBlock, k); i++ {
								a, b := float64(x[r*ldx+i]), float64(w[i*n+j])
								sum = float32(math.FMA(a, b, float64(sum)))
								exact += a * b
								abs += math.Abs(a * b)
							}
							if k0 == 0 && !add {
								want = sum
							} else {
								want += sum
							}
						}
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%s: c[%d][%d] = %v, the promised sum %v", name, r, j, got, want)
						}
						if math.Abs(float64(got)-exact) > float64(k+1)*0x1p-24*abs+1e-30 {
							t.Fatalf("%s: c[%d][%d] = %v, float64 %v", name, r, j, got, exact)
						}
					}
				}
			}
		}
	}
}

// BenchmarkPackedGemm times a decoder step's gate products at the "small" model's shapes (640 inputs, 1,024 gate
// columns) on a PackedGemm packed once and on Gemm's BLAS (single-threaded with -tags openblas in training's
// workers and in decoding; here as the BLAS is set): in training, a worker's 32 rows forward x·W and backward
// dG·Wᵀ; in decoding (kernels.PackForSteps), forward at a running batch's 1, 5, 16 and 64 rows.
func BenchmarkPackedGemm(b *testing.B) {
	const in, gates = 640, 1024
	rng := rand.New(rand.NewPCG(1, 2))
	w := normals(rng, in*gates, 0.04)
	for _, c := range []struct {
		name    string
		m, k, n int
		forward bool
	}{{"forward", 32, in, gates, true}, {"backward", 32, gates, in, false},
		{"decode-1", 1, in, gates, true}, {"decode-5", 5, in, gates, true}, {"decode-16", 16, in, gates, true}, {"decode-64", 64, in, gates, true}} {
		m := c.m
		x, out := normals(rng, m*c.k, 1), make([]float32, m*c.n)
		b.Run(c.name+"/packed", func(b *testing.B) {
			if !hasAVX512 {
				b.Skip("no AVX-512")
			}
			var g PackedGemm
			g.Pack(w, c.k, c.n, !c.forward)
			for i := 0; i < b.N; i++ {
				g.Mul(x, m, c.k, out, c.n, false)
			}
			b.ReportMetric(float64(2*m*in*gates)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(c.name+"/blas", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if c.forward {
					Gemm(false, false, m, c.n, c.k, 1, x, c.k, w, c.n, 0, out, c.n)
				} else {
					Gemm(false, true, m, c.n, c.k, 1, x, c.k, w, c.k, 0, out, c.n)
				}
			}
			b.ReportMetric(float64(2*m*in*gates)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
