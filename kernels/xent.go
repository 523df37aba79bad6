package kernels

// OutputXent is the output layer, log-softmax and cross-entropy fused, with its gradient computed in the same
// pass. It never holds more than chunk rows of logits, so memory does not grow with steps × vocabulary.
//
//	x (n, in), w (in, v), b (v), targets (n): rows whose target is pad contribute nothing.
//	loss = Σ_r −log softmax(x_r w + b)[targets_r]
//	dx = G wᵀ, dw = xᵀ G, db = Σ_r G_r, with G_r = softmax(x_r w + b) − onehot(targets_r) (0 on pad rows)
//
// dx, dw and db are overwritten. scratch must hold chunk·v values.
func OutputXent[T Float](x, w, b []T, targets []int, pad, n, in, v, chunk int, dx, dw, db, scratch []T) (loss float64) {
	clear(dw)
	clear(db)
	for start := 0; start < n; start += chunk {
		rows := min(chunk, n-start)
		xc := x[start*in : (start+rows)*in]
		g := scratch[:rows*v]
		// logits = x_c w + b
		Gemm(false, false, rows, v, in, 1, xc, in, w, v, 0, g, v)
		for r := 0; r < rows; r++ {
			row := g[r*v : (r+1)*v]
			y := targets[start+r]
			if y == pad {
				clear(row)
				continue
			}
			for j, bj := range b {
				row[j] += bj
			}
			xy := float64(row[y])
			loss += SoftmaxRow(row, v) - xy // −log p_y = lse − x_y
			row[y]--                        // G = p − onehot
			for j, gj := range row {
				db[j] += gj
			}
		}
		// dw += x_cᵀ G;  dx_c = G wᵀ
		Gemm(true, false, in, v, rows, 1, xc, in, g, v, 1, dw, v)
		Gemm(false, true, rows, in, v, 1, g, v, w, v, 0, dx[start*in:(start+rows)*in], in)
	}
	return loss
}
