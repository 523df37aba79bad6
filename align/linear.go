package align

import "github.com/attend-nmt/attend/kernels"

// linear is the forward pass of a linear map, as llm.c's matmul_forward: y = x W over n rows, with x (n, in),
// W (in, out) and y (n, out) stored with row stride ldy (at least out), so that y may be a column block of a
// wider buffer. y is overwritten.
func linear[T kernels.Float](x, w []T, n, in, out int, y []T, ldy int) {
	kernels.Gemm(false, false, n, out, in, 1, x, in, w, out, 0, y, ldy)
}

// linearBackward is the backward pass of linear: given dy (row stride ldy), it adds dW += xᵀ dy into dw and
// dx += dy Wᵀ into dx.
func linearBackward[T kernels.Float](x, w, dy []T, n, in, out, ldy int, dx, dw []T) {
	kernels.Gemm(true, false, in, out, n, 1, x, in, dy, ldy, 1, dw, out)
	kernels.Gemm(false, true, n, in, out, 1, dy, ldy, w, out, 1, dx, in)
}
