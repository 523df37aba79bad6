package kernels

// Arena hands out named scratch buffers that are reused from call to call: Get(name, n) returns n values of the
// buffer called name, growing it when a larger shape needs more. Training graphs of different batch shapes run
// one at a time, so they share one arena and the scratch of the largest shape is all the memory they hold.
// The contents of a buffer are whatever its last user left.
type Arena[T Float] struct {
	buffers map[string][]T
	// AMX, when not nil (float32 arenas only), has the output layer run its matrix products on Intel AMX, with
	// this scratch (OutputXent), in bfloat16 or split (bfloat16x3); nil keeps them in T. Split, the recurrent
	// layers' products run on AMX too (AMXGemm).
	AMX *AMXOutput
	// SingleThreaded, set for training's workers (whose products run on one thread each), has the recurrent
	// layers' products by their weights run on PackedGemms (float32 arenas, where AVX-512 runs and the products are
	// not split on AMX): see PackWeights.
	SingleThreaded bool
	gemms          map[string]*AMXGemm
	packed         map[string]*PackedGemm
	products       map[string]*AMXProduct
}

// WeightProduct is a product c = x·w, or c += x·w, by weights packed once for many calls, as a recurrent layer
// multiplies its weights at every step: an AMXGemm or a PackedGemm.
type WeightProduct interface {
	// Mul sets c[i*ldc+j] to the sum over k of x[i*ldx+k]·w[k][j] for i < m and the weights' columns j, or with
	// add adds that sum to c.
	Mul(x []float32, m, ldx int, c []float32, ldc int, add bool)
}

// PackWeights packs the weights (k, n) called name for many products and returns their WeightProduct: w is
// row-major (k, n), or with transposed the row-major (n, k) matrix whose transpose they are. It packs them on
// an AMXGemm, split, when the arena's AMX products are split, and otherwise on a PackedGemm when the arena is
// SingleThreaded and float32 and AVX-512 runs here. It returns nil, packing nothing, in every other case, and the
// caller keeps its products on Gemm's BLAS.
func (a *Arena[T]) PackWeights(name string, w []T, k, n int, transposed bool) WeightProduct {
	w32, ok := any(w).([]float32)
	if !ok {
		return nil
	}
	if g := a.AMXGemm(name); g != nil {
		g.Pack(w32, k, n, transposed, true)
		return g
	}
	if !a.SingleThreaded || !PackedGemmRuns() {
		return nil
	}
	g := a.packed[name]
	if g == nil {
		g = &PackedGemm{}
		a.packed[name] = g
	}
	g.Pack(w32, k, n, transposed)
	return g
}

// NewArena returns an empty arena.
func NewArena[T Float]() *Arena[T] {
	return &Arena[T]{buffers: map[string][]T{}, gemms: map[string]*AMXGemm{}, packed: map[string]*PackedGemm{},
		products: map[string]*AMXProduct{}}
}

// AMXGemm returns the AMXGemm called name, made on its first call, when the arena is float32 and its AMX products
// are split (bfloat16x3): a recurrent layer's products by its weights then run on AMX, split as the output
// layer's. It returns nil otherwise, and the caller keeps its float products. Where the arena's AMX was made
// with other workers' (NewAMXOutputs), the AMXGemms of one name in their arenas share one packing of the weights
// (AMXGemm.Pack), made once after each WeightsChanged.
func (a *Arena[T]) AMXGemm(name string) *AMXGemm {
	if _, ok := any(a).(*Arena[float32]); !ok || a.AMX == nil || !a.AMX.split {
		return nil
	}
	g := a.gemms[name]
	if g == nil {
		g = &AMXGemm{shared: a.AMX.gemmPack(name)} // NewAMXOutput checked that AMX runs here
		a.gemms[name] = g
	}
	return g
}

// AMXProduct returns the AMXProduct called name, made on its first call, split (bfloat16x3), when the arena is
// float32 and its AMX products are split: a recurrent layer's weight gradients then run on AMX, split as the
// output layer's. It returns nil otherwise, and the caller keeps its float products.
func (a *Arena[T]) AMXProduct(name string) *AMXProduct {
	if _, ok := any(a).(*Arena[float32]); !ok || a.AMX == nil || !a.AMX.split {
		return nil
	}
	p := a.products[name]
	if p == nil {
		p = &AMXProduct{split: true} // NewAMXOutput checked that AMX runs here
		a.products[name] = p
	}
	return p
}

// Get returns a slice of length n of the buffer called name.
func (a *Arena[T]) Get(name string, n int) []T {
	b := a.buffers[name]
	if cap(b) < n {
		b = make([]T, n)
		a.buffers[name] = b
	}
	return b[:n]
}

// Len is the number of values the arena's buffers hold in all.
func (a *Arena[T]) Len() int {
	n := 0
	for _, b := range a.buffers {
		n += cap(b)
	}
	return n
}
