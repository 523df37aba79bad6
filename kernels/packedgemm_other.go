//go:build !amd64 || purego

package kernels

// hasAVX512 reports that f32Tile is not in this build.
const hasAVX512 = false

// f32Tile is never called where hasAVX512 is false.
func f32Tile(x *float32, xStride int, w *float32, k int, c *float32, ldc int, masks uint64, add bool) {
	panic("kernels: f32Tile without AVX-512")
}
