//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// hasBF16 reports whether bf16Tile can run here: AVX-512 with its BF16 extension (Cooper Lake, Sapphire Rapids,
// Zen 4 and later).
var hasBF16 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16

// bf16Faster reports whether bf16Tile is faster here than float32 products: on AMD's CPUs with AVX512-BF16 (Zen 4
// and later), where the output layer's product ran 2.5 times as fast as OpenBLAS's sgemm; not on Intel's, where
// VDPBF16PS was measured slower than float32 FMAs (docs/speed.md).
var bf16Faster = hasBF16 && isAMD()

// isAMD reports whether CPUID names AMD as the CPU's vendor ("AuthenticAMD").
func isAMD() bool {
	ebx, ecx, edx := cpuidVendor()
	const auth, enti, camd = 0x68747541, 0x69746e65, 0x444d4163 // "Auth", "enti", "cAMD" as little-endian words
	return ebx == auth && edx == enti && ecx == camd
}

// cpuidVendor returns CPUID leaf 0's vendor words (bf16_amd64.s).
//
//go:noescape
func cpuidVendor() (ebx, ecx, edx uint32)

// bf16Tile is the product of bf16TileOf on AVX512-BF16 (bf16_amd64.s): xStride, stripStride,
// pairStride and ldc are in bytes, pairs ≥ 1; with add ≠ 0 the sums start from c's values.
//
//go:noescape
func bf16Tile(x *uint32, xStride int, w *uint32, stripStride, pairStride int, pairs int, c *float32, ldc int, add int)
