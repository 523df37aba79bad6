package kernels

// OutputXent is the output layer, log-softmax and cross-entropy fused, with its gradient computed in the same
// pass. It never holds more than chunk rows of logits, so memory does not grow with steps × vocabulary.
//
//	x (n, in), w (in, v), b (v), targets (n): rows whose target is pad contribute nothing.
//	z_r = x_r w + b,  q_r = (1−ε)·onehot(targets_r) + ε/v   (label smoothing ε; 0: plain cross-entropy)
//	loss = Σ_r −Σ_j q_rj log softmax(z_r)_j = Σ_r lse(z_r) − (1−ε) z_{r,y} − (ε/v) Σ_j z_rj
//	dx = G wᵀ, dw = xᵀ G, db = Σ_r G_r, with G_r = softmax(z_r) − q_r (0 on pad rows)
//
// The smoothed target is PyTorch's CrossEntropyLoss(label_smoothing=ε). dx, dw and db are overwritten.
// scratch must hold chunk·v values.
func OutputXent[T Float](x, w, b []T, targets []int, pad, n, in, v, chunk int, smoothing float64, dx, dw, db, scratch []T) (loss float64) {
	clear(dw)
	clear(db)
	losses := make([]float64, min(chunk, n))
	for start := 0; start < n; start += chunk {
		rows := min(chunk, n-start)
		xc := x[start*in : (start+rows)*in]
		g := scratch[:rows*v]
		// logits = x_c w + b
		Gemm(false, false, rows, v, in, 1, xc, in, w, v, 0, g, v)
		// Rows are independent: the softmax of each is shared out over the cores (between the products, which
		// OpenBLAS already spreads). Losses are kept per row and summed in row order, and db is summed column by
		// column in row order, so the result is the serial one bit for bit, whatever the number of workers.
		rowLoss := losses[:rows]
		Parallel(rows, xentRowGrain, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := g[r*v : (r+1)*v]
				y := targets[start+r]
				if y == pad {
					clear(row)
					rowLoss[r] = 0
					continue
				}
				for j, bj := range b {
					row[j] += bj
				}
				rowLoss[r] = XentRow(row, y, smoothing)
			}
		})
		for r := 0; r < rows; r++ {
			if targets[start+r] != pad {
				loss += rowLoss[r]
			}
		}
		Parallel(v, xentColumnGrain, func(lo, hi int) {
			dbc := db[lo:hi]
			for r := 0; r < rows; r++ {
				if targets[start+r] == pad {
					continue
				}
				for j, gj := range g[r*v+lo : r*v+hi] {
					dbc[j] += gj
				}
			}
		})
		// dw += x_cᵀ G;  dx_c = G wᵀ
		Gemm(true, false, in, v, rows, 1, xc, in, g, v, 1, dw, v)
		Gemm(false, true, rows, in, v, 1, g, v, w, v, 0, dx[start*in:(start+rows)*in], in)
	}
	return loss
}

// xentRowGrain and xentColumnGrain are the fewest rows, and vocabulary columns, worth a goroutine of their own
// in OutputXent: a row is a softmax over the vocabulary (thousands of exps), a column a sum over the chunk's rows.
const (
	xentRowGrain    = 16
	xentColumnGrain = 512
)

// XentRow is the loss of one row of the output layer, forward and backward at once: it turns a row of logits z
// into the gradient softmax(z) − q in place and returns the loss lse(z) − (1−ε) z_y − (ε/V) Σ_j z_j, with
// q = (1−ε)·onehot(y) + ε/V (label smoothing ε). With ε = 0 it is the plain −log softmax(z)_y = lse(z) − z_y, bit
// for bit. The loss is taken from the logits rather than log(p), which can underflow.
func XentRow[T Float](row []T, y int, smoothing float64) float64 {
	hit, spread := 1-smoothing, smoothing/float64(len(row))
	var zsum float64
	if smoothing != 0 {
		for _, z := range row {
			zsum += float64(z)
		}
	}
	zy := float64(row[y])
	loss := SoftmaxRow(row, len(row)) - hit*zy - spread*zsum
	row[y] -= T(hit)
	if smoothing != 0 {
		s := T(spread)
		for j := range row {
			row[j] -= s
		}
	}
	return loss
}
