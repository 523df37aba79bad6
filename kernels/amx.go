package kernels

import (
	"fmt"
	"runtime"
	"unsafe"
)

// A bfloat16 product on Intel AMX's tile registers (TDPBF16PS: bfloat16 terms, float32 sums in
// 16×16 tiles): c = ã·b̃ for ã and b̃ a and b rounded to bfloat16 (to nearest, ties to even). Both operands are
// rounded and padded with zeros to whole 32×32 blocks first: a (M, K) into row-major bfloat16 rows (amxA), b (K,
// N) into 16-column panels of bfloat16 pairs (amxB), the layout TDPBF16PS reads. Each product of two bfloat16s is
// exact in float32, so c is off the float64 sum of the rounded terms by float32 summation only. Split
// (bfloat16x3), each float32 term is two bfloat16s, hi + lo, and c sums the three products lo·hi + hi·lo + hi·hi:
// terms off by a relative 2^-16 at most, at three products' cost. The training output layer (AMXOutput,
// train.precision bf16 and bf16x3), the decoder's gates in training (AMXGemm, bf16x3) and greedy and beam
// search (AMXWeights) multiply with it.

const amxBlock = 32 // rows and columns of the block of c that amxStrip keeps in four tiles, and k's per step

// amxChunk is how many k's amxMul sums over all of c before moving to the next ones when a does not fit in L2
// (amxL2): 1,024 k's of 432 rows of a are 864 KB, which stay in a 2 MB L2 cache while every strip of b's columns
// passes by. A whole product with many k's (dL·Wᵀ's 5,898) reread a from memory for each strip.
const amxChunk = 1024

// amxL2 is the most bytes of a that amxMul keeps in L2 while it takes each strip of c through all its k's, so
// that c is written once.
const amxL2 = 1 << 20

// amxPass is a run of k's of a product: kBlocks blocks of 32 from column aK of a's rows and row bK of b.
type amxPass struct{ aK, bK, kBlocks int }

// amxPasses returns the passes of a·b in chunks of amxChunk k's: one run of k's, or split (bfloat16x3) three
// over the segments, lo·hi, hi·lo and hi·hi (the small terms first).
func amxPasses(a *amxA, b *amxB) []amxPass {
	runs := []amxPass{{0, 0, a.seg / amxBlock}}
	if a.split {
		runs = []amxPass{{a.seg, 0, a.seg / amxBlock}, {0, b.seg, a.seg / amxBlock}, {0, 0, a.seg / amxBlock}}
	}
	var passes []amxPass
	for _, r := range runs {
		for k0 := 0; k0 < r.kBlocks*amxBlock; k0 += amxChunk {
			passes = append(passes, amxPass{r.aK + k0, r.bK + k0, min(amxChunk, r.kBlocks*amxBlock-k0) / amxBlock})
		}
	}
	return passes
}

// amxRoundUp rounds n up to a whole number of amxBlocks.
func amxRoundUp(n int) int { return (n + amxBlock - 1) / amxBlock * amxBlock }

// amxSegments returns the padded length of an operand's k's: a segment of k rounded up to a whole 32, and all of
// them, the one segment, or split (bfloat16x3) two, [hi, lo].
func amxSegments(k int, split bool) (seg, kp int) {
	seg = amxRoundUp(k)
	if split {
		return seg, 2 * seg
	}
	return seg, seg
}

// amxA is an (M, K) matrix rounded to bfloat16, row-major with its rows and columns padded with zeros to whole
// 32s (mp, seg). Split (bfloat16x3), each value x is held as two bfloat16s, x ≈ hi + lo (splitBF16), and each
// row is two segments of seg columns, [hi, lo] (kp = 2·seg): amxMul multiplies it by an amxB split the same way
// in three passes, lo·hi + hi·lo + hi·hi, the terms of x·w but the tiny lo·lo.
type amxA struct {
	m, k, mp, kp int
	seg          int  // k padded to a whole 32: the columns of one segment
	split        bool // two segments of bfloat16 parts (bfloat16x3) rather than one of rounded values
	data         []uint16
}

// newAMXA returns an amxA with room for an (m, k) matrix, all zero, one segment of rounded values.
func newAMXA(m, k int) *amxA {
	a := &amxA{}
	a.fit(m, k, false)
	return a
}

// fit makes a an (m, k) matrix, split or not, for round to fill, reusing its storage when it is large enough:
// its padding is zero, and its other values are whatever they were, as round sets each of them anew and never
// writes the padding. When a already has that shape its storage is kept as it is.
func (a *amxA) fit(m, k int, split bool) {
	if a.data != nil && a.m == m && a.k == k && a.split == split {
		return
	}
	a.m, a.k, a.mp, a.split = m, k, amxRoundUp(m), split
	a.seg, a.kp = amxSegments(k, split)
	if cap(a.data) < a.mp*a.kp {
		a.data = make([]uint16, a.mp*a.kp)
		return
	}
	a.data = a.data[:a.mp*a.kp]
	for i := 0; i < a.m; i++ { // each segment's columns past k
		for s := i * a.kp; s < (i+1)*a.kp; s += a.seg {
			clear(a.data[s+a.k : s+a.seg])
		}
	}
	clear(a.data[a.m*a.kp:]) // the rows past m
}

// round rounds (or splits) the (m, k) matrix whose element (i, j) is x[i*rs+j*cs] into a: rs = k, cs = 1 for a
// row-major matrix, rs = 1, cs = m for the transpose of a row-major (k, m) one. The padding stays zero. x must
// hold no NaN. Rows are rounded 16 values at a time on AVX-512 where the CPU has it (a strided one gathered).
func (a *amxA) round(x []float32, rs, cs int) {
	a.roundWith(amxVectorRound(), x, rs, cs)
}

// roundWith is round with the AVX-512 kernels (vector) or in plain Go.
func (a *amxA) roundWith(vector bool, x []float32, rs, cs int) {
	for i := 0; i < a.m; i++ {
		var lo []uint16
		if a.split {
			lo = a.data[i*a.kp+a.seg:][:a.k]
		}
		roundRun(vector, x[i*rs:], cs, a.data[i*a.kp:i*a.kp+a.k], lo)
	}
}

// roundRun rounds the values src[j*stride] for j < len(hi) to bfloat16 into hi, or with lo (as long) splits
// them into bfloat16 parts (splitBF16), the hi parts into hi and the lo parts into lo: 16 at a time with the
// AVX-512 kernels (vector; a strided run, a row of a transposed matrix, gathered) and the rest in plain Go.
func roundRun(vector bool, src []float32, stride int, hi, lo []uint16) {
	vec := 0
	if vector && len(hi) >= 16 {
		vec = len(hi) / 16 * 16
		switch {
		case lo == nil && stride == 1:
			amxRoundRow(&src[0], &hi[0], vec)
		case lo == nil:
			amxGatherRoundRow(&src[0], stride, &hi[0], vec)
		case stride == 1:
			amxSplitRow(&src[0], &hi[0], &lo[0], vec)
		default:
			amxGatherSplitRow(&src[0], stride, &hi[0], &lo[0], vec)
		}
	}
	for j := vec; j < len(hi); j++ {
		if lo == nil {
			hi[j] = ToBF16(src[j*stride])
		} else {
			hi[j], lo[j] = splitBF16(src[j*stride])
		}
	}
}

// splitBF16 splits x into two bfloat16s, x ≈ hi + lo: hi is x rounded to bfloat16 (to nearest, ties to even),
// lo the rest x − hi (exact in float32) rounded the same way, so that hi + lo is off x by at most a relative
// 2^-17 (bfloat16x3's terms; AMX reads a subnormal lo as zero, an absolute error below 2^-126).
func splitBF16(x float32) (hi, lo uint16) {
	hi = ToBF16(x)
	return hi, ToBF16(x - FromBF16(hi))
}

// amxB is a (K, N) matrix rounded to bfloat16 in TDPBF16PS's layout: panels of 16 columns, N padded to whole 32s,
// each panel kp/2 pair rows of 16 uint32s, where a uint32 holds rows 2p (low half) and 2p+1 (high half) of one
// column; K is padded with zero rows to seg, a whole 32. Split (bfloat16x3), each panel holds two segments of
// seg/2 pair rows, [hi, lo] (kp = 2·seg), as an amxA's.
type amxB struct {
	k, n, kp, np int
	seg          int  // k padded to a whole 32: the rows of one segment
	split        bool // two segments of bfloat16 parts (bfloat16x3) rather than one of rounded values
	data         []uint32
}

// newAMXB returns an amxB with room for a (k, n) matrix, all zero, one segment of rounded values.
func newAMXB(k, n int) *amxB {
	b := &amxB{}
	b.fit(k, n, false)
	return b
}

// is reports whether b is a (k, n) matrix, split or not.
func (b *amxB) is(k, n int, split bool) bool { return b.k == k && b.n == n && b.split == split }

// fit makes b a (k, n) matrix, split or not, for round to fill, reusing its storage when it is large enough:
// its padding is zero, and its other values are whatever they were, as round sets each of them anew and never
// writes the padding. When b already has that shape its storage is kept as it is.
func (b *amxB) fit(k, n int, split bool) {
	if b.data != nil && b.is(k, n, split) {
		return
	}
	b.k, b.n, b.np, b.split = k, n, amxRoundUp(n), split
	b.seg, b.kp = amxSegments(k, split)
	if cap(b.data) < b.np*b.kp/2 {
		b.data = make([]uint32, b.np*b.kp/2)
		return
	}
	b.data = b.data[:b.np*b.kp/2]
	pairs, used, segPairs := b.kp/2, (b.k+1)/2, b.seg/2 // a panel's pair rows, those round sets, a segment's
	for j0 := 0; j0 < b.np; j0 += 16 {
		panel := b.data[j0*pairs : (j0+16)*pairs]
		cols := min(max(b.n-j0, 0), 16) // the panel's columns that round sets
		for s := 0; s < pairs; s += segPairs {
			for p := s; p < s+used; p++ {
				clear(panel[p*16+cols : p*16+16])
			}
			clear(panel[(s+used)*16 : (s+segPairs)*16])
		}
	}
}

// asUint16 returns the uint16s that make up x, two for each value, the low half first (little-endian: amd64, where
// the AVX-512 kernels run).
func asUint16(x []uint32) []uint16 { return unsafe.Slice((*uint16)(unsafe.Pointer(&x[0])), 2*len(x)) }

// round rounds (or splits) the (k, n) matrix whose element (i, j) is w[i*rs+j*cs] into b's panels: rs = n, cs = 1
// for a row-major matrix, rs = 1, cs = k for the transpose of a row-major (n, k) one. It walks w in the order of
// its memory: along the rows of a pair for cs = 1 (16 columns at a time on AVX-512 where the CPU has it), down
// each column's pairs otherwise (a contiguous column 16 values at a time on AVX-512). w must hold no NaN.
func (b *amxB) round(w []float32, rs, cs int) {
	b.roundWith(amxVectorRound(), w, rs, cs)
}

// at is the index in b.data of column j's pair row p (of the first segment).
func (b *amxB) at(p, j int) int { return j/16*(b.kp/2)*16 + p*16 + j%16 }

// setPair sets column j's pair row p from its two values, rows 2p (even) and 2p+1 (odd): rounded, or split
// into the two segments.
func (b *amxB) setPair(p, j int, even, odd float32) {
	i := b.at(p, j)
	if !b.split {
		b.data[i] = uint32(ToBF16(even)) | uint32(ToBF16(odd))<<16
		return
	}
	hiE, loE := splitBF16(even)
	hiO, loO := splitBF16(odd)
	seg := b.seg / 2 * 16 // a segment's pair rows
	b.data[i] = uint32(hiE) | uint32(hiO)<<16
	b.data[i+seg] = uint32(loE) | uint32(loO)<<16
}

// roundWith is round with the AVX-512 kernel for row-major pair rows (vector) or in plain Go.
func (b *amxB) roundWith(vector bool, w []float32, rs, cs int) {
	seg := b.seg / 2 * 16
	if cs == 1 {
		for p := 0; p < b.k/2; p++ {
			even, odd := w[2*p*rs:2*p*rs+b.n], w[(2*p+1)*rs:(2*p+1)*rs+b.n]
			vec := 0
			if vector && b.n >= 16 {
				vec = b.n / 16 * 16
				if i := b.at(p, 0); b.split {
					amxSplitPairs(&even[0], &odd[0], &b.data[i], &b.data[i+seg], vec, 4*b.kp/2*16)
				} else {
					amxRoundPairs(&even[0], &odd[0], &b.data[i], vec, 4*b.kp/2*16)
				}
			}
			for j := vec; j < b.n; j++ {
				b.setPair(p, j, even[j], odd[j])
			}
		}
	} else if vector && rs == 1 && b.k >= 16 {
		// Each column's k values are contiguous: round (or split) a panel's 16 columns as rows, whose bfloat16s
		// side by side are the column's pairs (little-endian), then gather the panel's pair rows 16 uint32s at a
		// time (a partial last panel in plain Go).
		pairs := b.seg / 2
		hi, lo := make([]uint32, 16*pairs), []uint32(nil)
		hi16, lo16 := asUint16(hi), []uint16(nil)
		if b.split {
			lo = make([]uint32, 16*pairs)
			lo16 = asUint16(lo)
		}
		for j0 := 0; j0 < b.n; j0 += 16 {
			cols := min(16, b.n-j0)
			for c := 0; c < cols; c++ {
				var l []uint16
				if b.split {
					l = lo16[c*b.seg : c*b.seg+b.k]
				}
				roundRun(true, w[(j0+c)*cs:(j0+c)*cs+b.k], 1, hi16[c*b.seg:c*b.seg+b.k], l)
			}
			panel := b.data[b.at(0, j0):]
			gather := func(rows []uint32, dst []uint32) {
				if cols == 16 {
					amxGatherPairs(&rows[0], pairs, &dst[0], b.k/2)
					return
				}
				for p := 0; p < b.k/2; p++ {
					for c := range cols {
						dst[p*16+c] = rows[c*pairs+p]
					}
				}
			}
			gather(hi, panel)
			if b.split {
				gather(lo, panel[seg:])
			}
		}
	} else {
		for j := 0; j < b.n; j++ {
			col := w[j*cs:]
			for p := 0; p < b.k/2; p++ {
				b.setPair(p, j, col[2*p*rs], col[(2*p+1)*rs])
			}
		}
	}
	if b.k%2 == 1 {
		for j := 0; j < b.n; j++ {
			b.setPair(b.k/2, j, w[(b.k-1)*rs+j*cs], 0)
		}
	}
}

// trivialProduct checks that a and b multiply and that c (rows ldc apart) holds their product, for the product
// called name (amxMul, dpMul), and computes the product itself where it is trivial: none with no rows or columns,
// and with no k's zeros (or, with add, c as it is). done reports that nothing is left to compute.
func trivialProduct(name string, a *amxA, b *amxB, c []float32, ldc int, add bool) (done bool, err error) {
	if a.k != b.k || a.split != b.split {
		return true, fmt.Errorf("kernels: %s of (%d, %d) by (%d, %d), split %v and %v", name, a.m, a.k, b.k, b.n, a.split, b.split)
	}
	if a.m == 0 || b.n == 0 {
		return true, nil
	}
	if ldc < b.n || len(c) < (a.m-1)*ldc+b.n {
		return true, fmt.Errorf("kernels: %s: c of %d values, ldc %d, for (%d, %d)", name, len(c), ldc, a.m, b.n)
	}
	if a.k == 0 {
		for i := 0; i < a.m && !add; i++ {
			clear(c[i*ldc : i*ldc+b.n])
		}
		return true, nil
	}
	return false, nil
}

// amxTileConfig returns LDTILECFG's 64 bytes for amxStrip: palette 1 and tiles 0-7 of 16 rows of 64 bytes.
func amxTileConfig() [64]byte {
	var cfg [64]byte
	cfg[0] = 1 // palette
	for t := 0; t < 8; t++ {
		cfg[16+2*t] = 64 // bytes a row (uint16, little-endian)
		cfg[48+t] = 16   // rows
	}
	return cfg
}

// amxMul sets c[i*ldc+j] to the float32 sum over k of ã[i][k]·b̃[k][j] for i < a.m, j < b.n, or with add adds
// that sum to it (the tiles start from c's values), leaving c's other values alone, on the tile registers of the
// calling goroutine's thread, which it locks for the call. It fails, computing nothing, where the CPU or the OS
// refuses AMX (amxPermit) or the shapes do not fit.
func amxMul(a *amxA, b *amxB, c []float32, ldc int, add bool) error {
	if done, err := trivialProduct("amxMul", a, b, c, ldc, add); done || err != nil {
		return err
	}
	if err := amxPermit(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg := amxTileConfig()
	fullM, rest := a.m/amxBlock, a.m%amxBlock
	lda, panel, pairs := 2*a.kp, 4*16*a.kp/2, a.kp/2
	full := b.n / amxBlock // strips of 32 whole columns
	// The rows past fullM's blocks in the full strips, and the last, partial strip, are summed in edge buffers
	// that hold their blocks across chunks of k.
	var restRows, lastCols []float32
	if rest > 0 && full > 0 {
		restRows = make([]float32, amxBlock*full*amxBlock)
		for i := 0; i < rest && add; i++ {
			r := fullM*amxBlock + i
			copy(restRows[i*full*amxBlock:(i+1)*full*amxBlock], c[r*ldc:])
		}
	}
	if full*amxBlock < b.n {
		lastCols = make([]float32, a.mp*amxBlock)
		for i := 0; i < a.m && add; i++ {
			copy(lastCols[i*amxBlock:i*amxBlock+b.n-full*amxBlock], c[i*ldc+full*amxBlock:i*ldc+b.n])
		}
	}
	// A pass sums a chunk of k's over a strip of columns: the first sets the tiles from zero (or from c with add),
	// the others add. When a fits in L2 each strip of c takes all its passes at once (c is written once); else
	// each pass goes over every strip, a's chunk staying in L2.
	passes := amxPasses(a, b)
	strip := func(s int, p amxPass, acc int) {
		from := s * amxBlock
		as, bs := a.data[p.aK:], &b.data[s*2*16*pairs+p.bK/2*16]
		if s == full {
			amxStrip(&cfg, &as[0], lda, bs, panel, &lastCols[0], 4*amxBlock, p.kBlocks, a.mp/amxBlock, acc)
			return
		}
		if fullM > 0 {
			amxStrip(&cfg, &as[0], lda, bs, panel, &c[from], 4*ldc, p.kBlocks, fullM, acc)
		}
		if rest > 0 {
			amxStrip(&cfg, &as[fullM*amxBlock*a.kp], lda, bs, panel, &restRows[from], 4*full*amxBlock, p.kBlocks, 1, acc)
		}
	}
	acc := func(i int) int { // the first pass adds to c only with add
		if i == 0 && !add {
			return 0
		}
		return 1
	}
	strips := b.np / amxBlock
	if 2*a.mp*a.kp <= amxL2 {
		for s := 0; s < strips; s++ {
			for i, p := range passes {
				strip(s, p, acc(i))
			}
		}
	} else {
		for i, p := range passes {
			for s := 0; s < strips; s++ {
				strip(s, p, acc(i))
			}
		}
	}
	for i := 0; i < rest; i++ {
		r := fullM*amxBlock + i
		copy(c[r*ldc:r*ldc+full*amxBlock], restRows[i*full*amxBlock:])
	}
	if lastCols != nil {
		from := full * amxBlock
		for i := 0; i < a.m; i++ {
			copy(c[i*ldc+from:i*ldc+b.n], lastCols[i*amxBlock:])
		}
	}
	return nil
}
