//go:build !amd64 || purego

package kernels

const hasBF16 = false

const bf16Faster = false

// bf16Tile is never called without AVX512-BF16: bf16TileOf sums in Go instead.
func bf16Tile(x *uint32, xStride int, w *uint32, stripStride, pairStride int, pairs int, c *float32, ldc int, add int) {
	panic("kernels: bf16Tile without AVX512-BF16")
}
