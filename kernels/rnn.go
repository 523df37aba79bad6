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
