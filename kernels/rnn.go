package kernels

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

// LSTMStep is one LSTM step over rows, every row updated: gates = x·W_ih + b + h·W_hh, with x (rows, in),
// inputW (4, in, H), hiddenW (4, H, H), bias (4, H) and gates (rows, 4H) as scratch, then LSTMPointwise from the
// cell c into hNew and cNew (rows, H).
func LSTMStep[T Float](x []T, rows, in int, h, c, inputW, hiddenW, bias []T, hidden int, gates, hNew, cNew []T) {
	Project(x, rows, in, inputW, 4, hidden, gates, false)
	AddBias(gates, rows, 4*hidden, bias)
	Project(h, rows, hidden, hiddenW, 4, hidden, gates, true)
	LSTMPointwise(gates, c, rows, hidden, hNew, cNew)
}

// LSTMPointwise turns pre-activations (rows, 4H), bias included, and the previous cell state cPrev (rows, H)
// into the new hidden state h and cell state c (rows, H):
//
//	i, f, o = σ(gates_i), σ(gates_f), σ(gates_o);  g = tanh(gates_g)
//	c = f*cPrev + i*g;  h = o*tanh(c)
func LSTMPointwise[T Float](gates, cPrev []T, rows, hidden int, h, c []T) {
	for r := 0; r < rows; r++ {
		g := gates[r*4*hidden : (r+1)*4*hidden]
		LSTMActivate(g, hidden)
		cr, hr := c[r*hidden:(r+1)*hidden], h[r*hidden:(r+1)*hidden]
		for j := range cr {
			cr[j] = g[GateF*hidden+j]*cPrev[r*hidden+j] + g[GateI*hidden+j]*g[GateG*hidden+j]
		}
		copy(hr, cr)
		TanhSlice(hr)
		for j := range hr {
			hr[j] *= g[GateO*hidden+j]
		}
	}
}

// LSTMActivate turns one row of gate pre-activations (4H, bias included) into activations in place:
// σ on the input and forget gates (contiguous), tanh on the candidate, σ on the output gate.
func LSTMActivate[T Float](g []T, hidden int) {
	SigmoidSlice(g[:2*hidden])
	TanhSlice(g[GateG*hidden : (GateG+1)*hidden])
	SigmoidSlice(g[GateO*hidden:])
}

// LSTMCellBackward is the backward pass of the pointwise LSTM step for one row, reading what the forward pass
// kept: act (4H) the gate activations σ(i), σ(f), tanh(g), σ(o); tanhC (H) tanh of the new cell state; cPrev (H)
// the previous cell state. Given dh (H), the gradient of the new hidden state, and dc (H), that of the new cell
// state from later steps, it writes the gate pre-activation gradients dGates (4H) and overwrites dc with the
// gradient of cPrev.
func LSTMCellBackward[T Float](act, tanhC, cPrev, dh, dc []T, hidden int, dGates []T) {
	for j := 0; j < hidden; j++ {
		ig, fg, cg, og := act[GateI*hidden+j], act[GateF*hidden+j], act[GateG*hidden+j], act[GateO*hidden+j]
		// forward: c = f·cPrev + i·g;  h = o·tanh(c)
		dcTotal := dc[j] + dh[j]*og*(1-tanhC[j]*tanhC[j])
		dGates[GateO*hidden+j] = dh[j] * tanhC[j] * og * (1 - og)
		dGates[GateI*hidden+j] = dcTotal * cg * ig * (1 - ig)
		dGates[GateG*hidden+j] = dcTotal * ig * (1 - cg*cg)
		dGates[GateF*hidden+j] = dcTotal * cPrev[j] * fg * (1 - fg)
		dc[j] = dcTotal * fg
	}
}

// GRUPointwise turns the input part gx (rows, 3H) and the hidden part gh (rows, 3H) of the pre-activations,
// each with its own bias included, and hPrev (rows, H) into the new hidden state h (rows, H):
//
//	r = σ(gx_r + gh_r);  z = σ(gx_z + gh_z);  n = tanh(gx_n + r*gh_n);  h = (1-z)*n + z*hPrev
func GRUPointwise[T Float](gx, gh, hPrev []T, rows, hidden int, h []T) {
	for r := 0; r < rows; r++ {
		x := gx[r*3*hidden : (r+1)*3*hidden]
		hh := gh[r*3*hidden : (r+1)*3*hidden]
		for j := 0; j < hidden; j++ {
			rg := Sigmoid(x[GateR*hidden+j] + hh[GateR*hidden+j])
			zg := Sigmoid(x[GateZ*hidden+j] + hh[GateZ*hidden+j])
			ng := Tanh(x[GateN*hidden+j] + rg*hh[GateN*hidden+j])
			h[r*hidden+j] = (1-zg)*ng + zg*hPrev[r*hidden+j]
		}
	}
}
