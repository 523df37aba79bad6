package kernels

// Arena hands out named scratch buffers that are reused from call to call: Get(name, n) returns n values of the
// buffer called name, growing it when a larger shape needs more. Training graphs of different batch shapes run
// one at a time, so they share one arena and the scratch of the largest shape is all the memory they hold.
// The contents of a buffer are whatever its last user left.
type Arena[T Float] struct {
	buffers map[string][]T
}

// NewArena returns an empty arena.
func NewArena[T Float]() *Arena[T] { return &Arena[T]{buffers: map[string][]T{}} }

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

// Multiplier is what a training worker multiplies with beside its scratch (Arena), as the Products it was made
// for ask: in bfloat16 its output layer's AMXOutput (Output, for OutputXent); the weights its recurrent layers
// multiply at every step packed once a step (PackWeights), on AMX split in bfloat16x3 or, for workers whose
// products run on one thread each, on a PackedGemm where PacksWeights; and in bfloat16x3 their weight gradients
// on AMX (AMXProduct). A nil *Multiplier multiplies in float32 on the BLAS: every method returns nil.
type Multiplier struct {
	// Output is the output layer's scratch in bfloat16 (nil: float32 products).
	Output   *AMXOutput
	pack     bool // float32 weights packed on PackedGemms
	gemms    map[string]*AMXGemm
	packed   map[string]*PackedGemm
	products map[string]*AMXProduct
}

// NewMultipliers returns the Multipliers of workers workers multiplying in products: in bfloat16 their output
// layers share one packing of the weights (NewAMXOutputs); with several workers, whose products run on one
// thread each, their recurrent weights are packed once a step where products.PacksWeights.
func NewMultipliers(products Products, workers int) ([]*Multiplier, error) {
	workers = max(workers, 1)
	var outs []*AMXOutput
	if !products.Float32() {
		var err error
		if outs, err = NewAMXOutputs(workers, products.format == BF16x3); err != nil {
			return nil, err
		}
	}
	ms := make([]*Multiplier, workers)
	for i := range ms {
		ms[i] = &Multiplier{pack: workers > 1 && products.PacksWeights(), gemms: map[string]*AMXGemm{},
			packed: map[string]*PackedGemm{}, products: map[string]*AMXProduct{}}
		if outs != nil {
			ms[i].Output = outs[i]
		}
	}
	return ms, nil
}

// OutputScratch is m's Output, or nil for a nil m: the output layer's scratch for OutputXent.
func (m *Multiplier) OutputScratch() *AMXOutput {
	if m == nil {
		return nil
	}
	return m.Output
}

// split reports whether m's products are bfloat16x3 on AMX.
func (m *Multiplier) split() bool { return m != nil && m.Output != nil && m.Output.split }

// WeightProduct is a product c = x·w, or c += x·w, by weights packed once for many calls, as a recurrent layer
// multiplies its weights at every step: an AMXGemm or a PackedGemm.
type WeightProduct interface {
	// Mul sets c[i*ldc+j] to the sum over k of x[i*ldx+k]·w[k][j] for i < m and the weights' columns j, or with
	// add adds that sum to c.
	Mul(x []float32, m, ldx int, c []float32, ldc int, add bool)
}

// PackWeights packs the weights (k, n) called name for many products by m and returns their WeightProduct: w is
// row-major (k, n), or with transposed the row-major (n, k) matrix whose transpose they are. It packs them on
// an AMXGemm, split, when m's products are bfloat16x3, and otherwise on a PackedGemm when m packs float32 weights
// (NewMultipliers) and w is float32. It returns nil, packing nothing, in every other case (m nil among them), and
// the caller keeps its products on Gemm's BLAS.
func PackWeights[T Float](m *Multiplier, name string, w []T, k, n int, transposed bool) WeightProduct {
	w32, ok := any(w).([]float32)
	if !ok || m == nil {
		return nil
	}
	if g := m.AMXGemm(name); g != nil {
		g.Pack(w32, k, n, transposed, true)
		return g
	}
	if !m.pack {
		return nil
	}
	g := named(m.packed, name, func() *PackedGemm { return &PackedGemm{} })
	g.Pack(w32, k, n, transposed)
	return g
}

// AMXGemm returns the AMXGemm called name, made on its first call, when m's products are bfloat16x3: a recurrent
// layer's products by its weights then run on AMX, split as the output layer's. It returns nil otherwise, and
// the caller keeps its float products. The AMXGemms of one name of Multipliers made together (NewMultipliers)
// share one packing of the weights (AMXGemm.Pack), made once after each WeightsChanged.
func (m *Multiplier) AMXGemm(name string) *AMXGemm {
	if !m.split() {
		return nil
	}
	// NewAMXOutputs checked that AMX runs here.
	return named(m.gemms, name, func() *AMXGemm { return &AMXGemm{shared: m.Output.gemmPack(name)} })
}

// AMXProduct returns the AMXProduct called name, made on its first call, split, when m's products are
// bfloat16x3: a recurrent layer's weight gradients then run on AMX, split as the output layer's. It returns nil
// otherwise (m nil among them), and the caller keeps its float products.
func (m *Multiplier) AMXProduct(name string) *AMXProduct {
	if !m.split() {
		return nil
	}
	// NewAMXOutputs checked that AMX runs here.
	return named(m.products, name, func() *AMXProduct { return &AMXProduct{split: true} })
}

// named returns the value called name in values, made by make and kept there on its first call.
func named[V any](values map[string]*V, name string, make func() *V) *V {
	v := values[name]
	if v == nil {
		v = make()
		values[name] = v
	}
	return v
}
