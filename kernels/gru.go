package kernels

// GRUForward is the GRU cell's pointwise step over rows rows of H units: from the input part gx (rows, 3H) and
// the hidden part gh (rows, 3H) of the pre-activations, each with its own bias included, and the previous state
// hPrev (rows, H) it writes the new state h (rows, H):
//
//	r = σ(gx_r + gh_r);  z = σ(gx_z + gh_z);  n = tanh(gx_n + r·gh_n);  h = (1−z)·n + z·hPrev
//
// act (rows, 3H) receives r, z and n when it is not nil (training): with gh and hPrev it is what GRUBackward
// reads. Inference passes nil. h may be hPrev.
func GRUForward[T Float](gx, gh, hPrev []T, rows, hidden int, h, act []T) {
	if len(gx) < rows*3*hidden || len(gh) < rows*3*hidden || len(hPrev) < rows*hidden || len(h) < rows*hidden ||
		(act != nil && len(act) < rows*3*hidden) {
		panic("kernels: GRUForward shapes")
	}
	for r := 0; r < rows; r++ {
		x, hh := gx[r*3*hidden:(r+1)*3*hidden], gh[r*3*hidden:(r+1)*3*hidden]
		for j := 0; j < hidden; j++ {
			rg := Sigmoid(x[GateR*hidden+j] + hh[GateR*hidden+j])
			zg := Sigmoid(x[GateZ*hidden+j] + hh[GateZ*hidden+j])
			ng := Tanh(x[GateN*hidden+j] + rg*hh[GateN*hidden+j])
			h[r*hidden+j] = (1-zg)*ng + zg*hPrev[r*hidden+j]
			if act != nil {
				a := act[r*3*hidden:]
				a[GateR*hidden+j], a[GateZ*hidden+j], a[GateN*hidden+j] = rg, zg, ng
			}
		}
	}
}

// GRUBackward is the backward pass of GRUForward over rows rows, reading what it kept: act (rows, 3H) = r, z,
// n, gh (rows, 3H) and hPrev (rows, H). Given dh (rows, H), the gradient of h, it writes the pre-activation
// gradients dgx and dgh (rows, 3H) and overwrites dh with z·dh, the part of hPrev's gradient that does not go
// through gh (the caller adds dgh · W_hhᵀ).
func GRUBackward[T Float](act, gh, hPrev, dh []T, rows, hidden int, dgx, dgh []T) {
	for r := 0; r < rows; r++ {
		a, hh := act[r*3*hidden:(r+1)*3*hidden], gh[r*3*hidden:(r+1)*3*hidden]
		dx, dhh := dgx[r*3*hidden:(r+1)*3*hidden], dgh[r*3*hidden:(r+1)*3*hidden]
		for j := 0; j < hidden; j++ {
			rg, zg, ng := a[GateR*hidden+j], a[GateZ*hidden+j], a[GateN*hidden+j]
			g := dh[r*hidden+j]
			// forward: h = (1−z)·n + z·hPrev
			dn := g * (1 - zg) * (1 - ng*ng) // through n = tanh(gx_n + r·gh_n)
			dz := g * (hPrev[r*hidden+j] - ng) * zg * (1 - zg)
			dr := dn * hh[GateN*hidden+j] * rg * (1 - rg)
			dx[GateR*hidden+j], dhh[GateR*hidden+j] = dr, dr
			dx[GateZ*hidden+j], dhh[GateZ*hidden+j] = dz, dz
			dx[GateN*hidden+j], dhh[GateN*hidden+j] = dn, dn*rg
			dh[r*hidden+j] = g * zg
		}
	}
}
