package kernels

// Linear is the forward pass of a linear map, as llm.c's matmul_forward: y = x W over n rows, with x (n, in),
// W (in, out) and y (n, out) stored with row stride ldy (at least out), so that y may be a column block of a
// wider buffer. y is overwritten.
func Linear[T Float](x, w []T, n, in, out int, y []T, ldy int) {
	Gemm(false, false, n, out, in, 1, x, in, w, out, 0, y, ldy)
}

// AddColumnSums adds the column sums of dy (n, width) into db, row by row: the gradient of a bias added to every
// row.
func AddColumnSums[T Float](db, dy []T, n, width int) {
	for r := 0; r < n; r++ {
		for j, g := range dy[r*width : (r+1)*width] {
			db[j] += g
		}
	}
}

// LinearBackward is the backward pass of Linear: given dy (row stride ldy), it adds dW += xᵀ dy into dw and
// dx += dy Wᵀ into dx.
func LinearBackward[T Float](x, w, dy []T, n, in, out, ldy int, dx, dw []T) {
	Gemm(true, false, in, out, n, 1, x, in, dy, ldy, 1, dw, out)
	Gemm(false, true, n, in, out, 1, dy, ldy, w, out, 1, dx, in)
}
