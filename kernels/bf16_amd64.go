//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// hasBF16 reports whether bf16Tile can run here: AVX-512 with its BF16 extension (Cooper Lake, Sapphire Rapids,
// Zen 4 and later).
var hasBF16 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16

// bf16Tile is BF16Panels.tile's product on AVX512-BF16 (bf16_amd64.s): xStride and ldc are in bytes, pairs ≥ 1.
//
//go:noescape
func bf16Tile(x *uint32, xStride int, w *uint32, pairs int, c *float32, ldc int)
