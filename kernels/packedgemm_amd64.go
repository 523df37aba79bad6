//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// hasAVX512 reports whether f32Tile can run here.
var hasAVX512 = cpu.X86.HasAVX512F

// f32Tile multiplies 8 rows of x by a panel of 48 columns of packed weights into c (packedgemm_amd64.s): xStride
// and ldc are in bytes, bit j of masks keeps column j, k ≥ 1.
//
//go:noescape
func f32Tile(x *float32, xStride int, w *float32, k int, c *float32, ldc int, masks uint64, add bool)
