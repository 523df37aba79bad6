//go:build linux && !purego

package kernels

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Linux's arch_prctl codes and the XSAVE feature number of AMX's tile data (arch/x86/include/uapi/asm/prctl.h).
const (
	archGetXCompPerm = 0x1022 // ARCH_GET_XCOMP_PERM: read the process's permitted XSAVE features
	archReqXCompPerm = 0x1023 // ARCH_REQ_XCOMP_PERM: ask for one more
	xfeatureTileData = 18     // XFEATURE_XTILEDATA: the 8 KB of tile registers
)

// amxPermit checks that the CPU has AMX-BF16 and asks Linux for the process's permission to use the tile
// registers, which it grants once for every thread of the process. It returns nil when tile instructions may
// run, and says why not otherwise. Asking again once granted is a cheap no-op.
func amxPermit() error {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 {
		return fmt.Errorf("kernels: the CPU has no AMX-BF16 (amx_tile %v, amx_bf16 %v)", cpu.X86.HasAMXTile, cpu.X86.HasAMXBF16)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXCompPerm, xfeatureTileData, 0); e != 0 {
		return fmt.Errorf("kernels: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): %w", e)
	}
	mask, err := amxPermittedMask()
	if err != nil {
		return err
	}
	if mask&(1<<xfeatureTileData) == 0 {
		return fmt.Errorf("kernels: arch_prctl granted AMX but the permitted mask is %#x", mask)
	}
	return nil
}

// amxPermittedMask returns the XSAVE features the process may use (ARCH_GET_XCOMP_PERM): bit 18 is the tile data.
func amxPermittedMask() (uint64, error) {
	var mask uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXCompPerm, uintptr(unsafe.Pointer(&mask)), 0); e != 0 {
		return 0, fmt.Errorf("kernels: arch_prctl(ARCH_GET_XCOMP_PERM): %w", e)
	}
	return mask, nil
}

// amxStrip multiplies 32·mBlocks rows of bfloat16 a by one 32-column strip of packed b into c on the tile
// registers (amx_amd64.s), or adds the product to c where acc ≠ 0; strides are in bytes. Call it only after amxPermit returned nil.
//
//go:noescape
func amxStrip(cfg *[64]byte, a *uint16, lda int, b *uint32, panel int, c *float32, ldc int, kBlocks, mBlocks, acc int)

// amxVectorRound reports whether amxRoundPairs and amxRoundRow can run here (AVX-512F).
func amxVectorRound() bool { return cpu.X86.HasAVX512F }

// amxRoundPairs rounds two contiguous runs of n float32s (n a multiple of 16) to bfloat16 pairs, lo's in the low
// halves, 16 to a run of dst and dstStride bytes from one run to the next (amx_amd64.s).
//
//go:noescape
func amxRoundPairs(lo, hi *float32, dst *uint32, n, dstStride int)

// amxRoundRow rounds n contiguous float32s (n a multiple of 16) to bfloat16 (amx_amd64.s).
//
//go:noescape
func amxRoundRow(x *float32, dst *uint16, n int)

// amxSplitRow splits n contiguous float32s (n a multiple of 16) into two bfloat16s each, x ≈ hi + lo
// (splitBF16), into hi and lo (amx_amd64.s).
//
//go:noescape
func amxSplitRow(x *float32, hi, lo *uint16, n int)

// amxSplitPairs splits two contiguous runs of n float32s (n a multiple of 16) as amxSplitRow does into bfloat16
// pairs, even's in the low halves: the pairs of hi parts into hi, those of lo parts into lo, each destination
// jumping dstStride bytes after every 16 values (amx_amd64.s).
//
//go:noescape
func amxSplitPairs(even, odd *float32, hi, lo *uint32, n, dstStride int)

// amxGatherPairs sets dst[p*16+c] = src[c*stride+p] for p < pairs and c < 16 (amx_amd64.s): a 16-column panel's
// pair rows from 16 rows of bfloat16 pairs.
//
//go:noescape
func amxGatherPairs(src *uint32, stride int, dst *uint32, pairs int)

// amxGatherRoundRow sets dst[j] = ToBF16(x[j*stride]) for j < n, a multiple of 16 (amx_amd64.s): a row of a
// transposed matrix.
//
//go:noescape
func amxGatherRoundRow(x *float32, stride int, dst *uint16, n int)

// amxGatherSplitRow splits x[j*stride] for j < n, a multiple of 16, as amxSplitRow does (amx_amd64.s): a row of
// a transposed matrix.
//
//go:noescape
func amxGatherSplitRow(x *float32, stride int, hi, lo *uint16, n int)
