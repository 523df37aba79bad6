package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The plain loops that the vectorized softmax passes replaced (expShifted, Max, XentRow as OutputXent ran them
// before): every fast path must give their figures to the last bit.

// plainMax is Max's loop: eight running maxima, each replaced by a later value only where that is larger.
func plainMax[T Float](xs []T) T {
	var m [8]T
	for i := range m {
		m[i] = xs[0]
	}
	i := 0
	for ; i+8 <= len(xs); i += 8 {
		for k := range m {
			if xs[i+k] > m[k] {
				m[k] = xs[i+k]
			}
		}
	}
	for ; i < len(xs); i++ {
		if xs[i] > m[0] {
			m[0] = xs[i]
		}
	}
	best := m[0]
	for _, x := range m[1:] {
		if x > best {
			best = x
		}
	}
	return best
}

// plainExpShifted is expShifted's loop: a running maximum, the differences stored, ExpSlice over the whole row,
// and a float64 sum in order.
func plainExpShifted[T Float](dst, src []T) (maxv T, sum float64) {
	maxv = src[0]
	for _, v := range src {
		if v > maxv {
			maxv = v
		}
	}
	for i, v := range src {
		dst[i] = v - maxv
	}
	ExpSlice(dst)
	for _, e := range dst {
		sum += float64(e)
	}
	return maxv, sum
}

// plainXentRow is a row of OutputXent as its loop ran it: the bias added, then XentRow with SoftmaxRow's loops.
func plainXentRow[T Float](row, b []T, y int, smoothing float64) float64 {
	for j, bj := range b {
		row[j] += bj
	}
	hit, spread := 1-smoothing, smoothing/float64(len(row))
	var zsum float64
	if smoothing != 0 {
		for _, z := range row {
			zsum += float64(z)
		}
	}
	zy := float64(row[y])
	maxv, sum := plainExpShifted(row, row)
	inv := T(1 / sum)
	for i := range row {
		row[i] *= inv
	}
	loss := float64(maxv) + math.Log(sum) - hit*zy - spread*zsum
	row[y] -= T(hit)
	if smoothing != 0 {
		s := T(spread)
		for j := range row {
			row[j] -= s
		}
	}
	return loss
}

// sameBits reports whether x and y are the same value to the last bit, or both NaN.
func sameBits[T Float](x, y T) bool {
	if x != x && y != y {
		return true
	}
	return math.Float64bits(float64(x)) == math.Float64bits(float64(y)) && math.Signbit(float64(x)) == math.Signbit(float64(y))
}

// softmaxRows returns rows of random logits of length n with the special cases of testLogSumExps: signed zero
// maxima, NaNs first and later, a row of -Inf, and a large positive value.
func softmaxRows[T Float](rng *rand.Rand, n int) map[string][]T {
	rows := map[string][]T{}
	fill := func() []T {
		row := make([]T, n)
		for i := range row {
			row[i] = T(rng.NormFloat64() * 8)
		}
		return row
	}
	rows["normal"] = fill()
	zeros := fill()
	for i := range zeros {
		zeros[i] = -200
	}
	if n > 9 {
		zeros[2], zeros[9] = T(math.Copysign(0, -1)), 0
	}
	rows["signed zeros"] = zeros
	nanFirst := fill()
	nanFirst[0] = T(math.NaN())
	rows["a NaN first"] = nanFirst
	nanLater := fill()
	nanLater[n-1] = T(math.NaN())
	rows["a NaN later"] = nanLater
	inf := fill()
	for i := range inf {
		inf[i] = T(math.Inf(-1))
	}
	rows["all -Inf"] = inf
	big := fill()
	big[n/2] = 90
	rows["a large value"] = big
	return rows
}

// TestSoftmaxPassesAreThePlainLoops requires Max, expShifted, expShiftedGroup (side by side, each group size) and
// scale to give the plain loops' figures to the last bit, in float32 (AVX2 where the CPU has it) and float64,
// over lengths with and without a tail of fewer than eight values and across lseChunk, on the special rows.
func TestSoftmaxPassesAreThePlainLoops(t *testing.T) {
	testSoftmaxPasses[float32](t)
	testSoftmaxPasses[float64](t)
}

func testSoftmaxPasses[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 7, 8, 9, 17, 100, 513, 1031, 5898} {
		rows := softmaxRows[T](rng, n)
		var names []string
		for name := range rows {
			names = append(names, name)
		}
		for _, name := range names {
			row := rows[name]
			what := fmt.Sprintf("%T, n %d, %s", T(0), n, name)
			if got, want := Max(row), plainMax(row); !sameBits(got, want) {
				t.Fatalf("%s: Max %v, the plain loop %v", what, got, want)
			}
			want := make([]T, n)
			wantMax, wantSum := plainExpShifted(want, row)
			got := make([]T, n)
			gotMax, gotSum := expShifted(got, row)
			// The maximum may differ in a zero's sign only, which no figure sees (Max's doc comment).
			if !(gotMax == wantMax || gotMax != gotMax && wantMax != wantMax) || !sameBits(gotSum, wantSum) {
				t.Fatalf("%s: expShifted max %v sum %v, the plain loop %v %v", what, gotMax, gotSum, wantMax, wantSum)
			}
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("%s: expShifted value %d is %v, the plain loop's %v", what, i, got[i], want[i])
				}
			}
			for group := 1; group <= 5; group++ {
				var src, dst [5][]T
				for g := range group {
					src[g] = append([]T(nil), rows[names[(g+len(names)-1)%len(names)]]...)
					if g == 0 {
						src[g] = append([]T(nil), row...)
					}
					dst[g] = src[g] // in place, as xentRows runs it
				}
				orig := src
				for g := range group {
					orig[g] = append([]T(nil), src[g]...)
				}
				var maxv [5]T
				var sum [5]float64
				expShiftedGroup(&dst, &src, group, &maxv, &sum)
				for g := range group {
					want := make([]T, n)
					wm, ws := plainExpShifted(want, orig[g])
					if !(maxv[g] == wm || maxv[g] != maxv[g] && wm != wm) || !sameBits(sum[g], ws) {
						t.Fatalf("%s, group of %d, row %d: max %v sum %v, the plain loop %v %v", what, group, g, maxv[g], sum[g], wm, ws)
					}
					for i := range want {
						if !sameBits(dst[g][i], want[i]) {
							t.Fatalf("%s, group of %d, row %d: value %d is %v, the plain loop's %v", what, group, g, i, dst[g][i], want[i])
						}
					}
				}
			}
			scaled, plain := append([]T(nil), row...), append([]T(nil), row...)
			a := T(1 / 3.7)
			scale(scaled, a)
			for i := range plain {
				plain[i] *= a
				if !sameBits(scaled[i], plain[i]) {
					t.Fatalf("%s: scale value %d is %v, the loop's %v", what, i, scaled[i], plain[i])
				}
			}
		}
	}
}

// TestXentRowsIsThePlainLoop requires xentRows to leave each row and loss as OutputXent's row loop did (the bias
// added, then XentRow's loops) to the last bit, with pad rows among the rows (zeros, loss 0), with and without
// label smoothing, for every count of rows up to past two groups of five, in float32 and float64.
func TestXentRowsIsThePlainLoop(t *testing.T) {
	testXentRows[float32](t)
	testXentRows[float64](t)
}

func testXentRows[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const pad = 0
	for _, v := range []int{3, 9, 100, 5898} {
		b := make([]T, v)
		for j := range b {
			b[j] = T(rng.NormFloat64())
		}
		for rows := 1; rows <= 12; rows++ {
			for _, smoothing := range []float64{0, 0.1} {
				logits := make([]T, rows*v)
				for i := range logits {
					logits[i] = T(rng.NormFloat64() * 6)
				}
				targets := make([]int, rows)
				for r := range targets {
					targets[r] = 1 + rng.IntN(v-1)
					if r%4 == 2 {
						targets[r] = pad
					}
				}
				want := append([]T(nil), logits...)
				wantLoss := make([]float64, rows)
				for r, y := range targets {
					row := want[r*v : (r+1)*v]
					if y == pad {
						clear(row)
						continue
					}
					wantLoss[r] = plainXentRow(row, b, y, smoothing)
				}
				for r, y := range targets { // XentRow, xentRows' group of one, on the biased row
					if y == pad {
						continue
					}
					row := append([]T(nil), logits[r*v:(r+1)*v]...)
					for j, bj := range b {
						row[j] += bj
					}
					if loss := XentRow(row, y, smoothing); !sameBits(loss, wantLoss[r]) || !slices.EqualFunc(row, want[r*v:(r+1)*v], sameBits[T]) {
						t.Fatalf("%T, v %d, ε %g: XentRow of row %d gives loss %v, the plain loop %v (or other values)", T(0), v, smoothing, r, loss, wantLoss[r])
					}
				}
				got, gotLoss := append([]T(nil), logits...), make([]float64, rows)
				for r := range gotLoss {
					gotLoss[r] = 99 // a pad row's loss must be set to 0
				}
				xentRows(got, b, targets, pad, smoothing, gotLoss)
				for r := range targets {
					if !sameBits(gotLoss[r], wantLoss[r]) {
						t.Fatalf("%T, v %d, %d rows, ε %g: row %d's loss %v, the plain loop's %v", T(0), v, rows, smoothing, r, gotLoss[r], wantLoss[r])
					}
				}
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%T, v %d, %d rows, ε %g: value %d is %v, the plain loop's %v", T(0), v, rows, smoothing, i, got[i], want[i])
					}
				}
			}
		}
	}
}
