package kernels

// LSTMForward is the LSTM cell's pointwise step over rows rows of H units: from the gate pre-activations
// gates (rows, 4H), bias included, and the previous cell state cPrev (rows, H) it writes the new hidden state h
// and cell state c (rows, H):
//
//	i, f, o = σ(gates_i), σ(gates_f), σ(gates_o);  g = tanh(gates_g)
//	c = f·cPrev + i·g;  h = o·tanh(c)
//
// The activations i, f, g, o replace the pre-activations in gates. tanhC (rows, H) receives tanh(c) when it is
// not nil (training): with gates and cPrev it is what LSTMBackward reads. Inference passes nil and keeps nothing.
// c must not be cPrev.
func LSTMForward[T Float](gates, cPrev []T, rows, hidden int, h, c, tanhC []T) {
	if len(gates) < rows*4*hidden || len(cPrev) < rows*hidden || len(h) < rows*hidden || len(c) < rows*hidden ||
		(tanhC != nil && len(tanhC) < rows*hidden) {
		panic("kernels: LSTMForward shapes")
	}
	for r := 0; r < rows; r++ {
		g := gates[r*4*hidden : (r+1)*4*hidden]
		SigmoidSlice(g[:2*hidden]) // σ(i), σ(f): contiguous
		TanhSlice(g[GateG*hidden : (GateG+1)*hidden])
		SigmoidSlice(g[GateO*hidden:])
		cr, hr, cp := c[r*hidden:(r+1)*hidden], h[r*hidden:(r+1)*hidden], cPrev[r*hidden:(r+1)*hidden]
		for j := range cr {
			cr[j] = g[GateF*hidden+j]*cp[j] + g[GateI*hidden+j]*g[GateG*hidden+j]
		}
		tc := hr
		if tanhC != nil {
			tc = tanhC[r*hidden : (r+1)*hidden]
		}
		copy(tc, cr)
		TanhSlice(tc)
		for j := range hr {
			hr[j] = g[GateO*hidden+j] * tc[j]
		}
	}
}

// LSTMBackward is the backward pass of LSTMForward over rows rows, reading what it kept: act (rows, 4H) the
// activations LSTMForward left in gates, tanhC (rows, H) and cPrev (rows, H). Given dh (rows, H), the gradient
// of h, and dc (rows, H), that of c from later steps, it writes the pre-activation gradients dGates (rows, 4H)
// and overwrites dc with the gradient of cPrev.
func LSTMBackward[T Float](act, tanhC, cPrev, dh, dc []T, rows, hidden int, dGates []T) {
	for r := 0; r < rows; r++ {
		a, dg := act[r*4*hidden:(r+1)*4*hidden], dGates[r*4*hidden:(r+1)*4*hidden]
		for j := r * hidden; j < (r+1)*hidden; j++ {
			k := j - r*hidden
			ig, fg, cg, og := a[GateI*hidden+k], a[GateF*hidden+k], a[GateG*hidden+k], a[GateO*hidden+k]
			// forward: c = f·cPrev + i·g;  h = o·tanh(c)
			dcTotal := dc[j] + dh[j]*og*(1-tanhC[j]*tanhC[j])
			dg[GateO*hidden+k] = dh[j] * tanhC[j] * og * (1 - og)
			dg[GateI*hidden+k] = dcTotal * cg * ig * (1 - ig)
			dg[GateG*hidden+k] = dcTotal * ig * (1 - cg*cg)
			dg[GateF*hidden+k] = dcTotal * cPrev[j] * fg * (1 - fg)
			dc[j] = dcTotal * fg
		}
	}
}
