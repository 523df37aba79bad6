package kernels

// The recurrent cells' shared pieces: gate orders, weight layouts and the per-gate projection. Each cell's
// pointwise step and its backward pass are in lstm.go and gru.go.

// LSTM gate order inside a (rows, 4H) pre-activation matrix and a (4, In, H) weight: input, forget, cell
// candidate, output (PyTorch's order, so weights can be compared one to one).
const (
	GateI = iota
	GateF
	GateG
	GateO
)

// GRU gate order inside a (rows, 3H) matrix and a (3, In, H) weight: reset, update, new (PyTorch's order).
const (
	GateR = iota
	GateZ
	GateN
)

// GateMajor copies a weight w laid out in gate blocks (gates, In, H) into out (In, gates*H), the layout in which
// x · out is Project(x, …, w, …) in one matrix product: row i of out holds input i's weights into gate 0, then
// gate 1, and so on. out must have In·gates·H values.
func GateMajor[T Float](w []T, gates, in, hidden int, out []T) {
	if len(w) != gates*in*hidden || len(out) != len(w) {
		panic("kernels: GateMajor got a weight or destination of the wrong size")
	}
	for k := 0; k < gates; k++ {
		for i := 0; i < in; i++ {
			copy(out[(i*gates+k)*hidden:(i*gates+k+1)*hidden], w[(k*in+i)*hidden:(k*in+i+1)*hidden])
		}
	}
}

// Project computes out[:, k*H:(k+1)*H] (+)= x · w[k] for every gate block k of w (gates, In, H), with x (rows, In)
// and out (rows, gates*H). With accumulate false out is overwritten.
func Project[T Float](x []T, rows, in int, w []T, gates, hidden int, out []T, accumulate bool) {
	beta := T(0)
	if accumulate {
		beta = 1
	}
	for k := 0; k < gates; k++ {
		Gemm(false, false, rows, hidden, in, 1, x, in, w[k*in*hidden:(k+1)*in*hidden], hidden, beta, out[k*hidden:], gates*hidden)
	}
}

// GateInput is one input of a recurrent layer's gates for GateGradients: X (n, M), row-major with leading
// dimension LDX, the input at every row, and DW the gradient of its weights in gate blocks (gates, M, H).
type GateInput[T Float] struct {
	X      []T
	LDX, M int
	DW     []T
}

// GateGradients adds to each input's weight gradient its gates' products over n rows at once: block k of DW +=
// Xᵀ·dG[:, k*H:(k+1)*H] for every gate k, with dG (n, gates*H) row-major with leading dimension ldg, the
// gradient of the pre-activations. With amx (T float32 only: Multiplier.AMXProduct) the products run on AMX,
// dG rounded once for every input and each X once for every gate; with nil, on Gemm, one product a gate.
func GateGradients[T Float](amx *AMXProduct, n, gates, hidden int, dG []T, ldg int, inputs ...GateInput[T]) {
	if amx == nil {
		for _, x := range inputs {
			for k := 0; k < gates; k++ {
				Gemm(true, false, x.M, hidden, n, 1, x.X, x.LDX, dG[k*hidden:], ldg, 1, x.DW[k*x.M*hidden:(k+1)*x.M*hidden], hidden)
			}
		}
		return
	}
	amx.RoundB(gates*hidden, n, any(dG).([]float32), ldg)
	for _, x := range inputs {
		amx.RoundA(x.M, n, any(x.X).([]float32), x.LDX)
		dw := any(x.DW).([]float32)
		for k := 0; k < gates; k++ {
			amx.AddTo(k*hidden, (k+1)*hidden, dw[k*x.M*hidden:(k+1)*x.M*hidden], hidden)
		}
	}
}
