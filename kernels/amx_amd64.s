//go:build linux && !purego

#include "textflag.h"

// Intel AMX (Sapphire Rapids and later), which Go's assembler does not know, as bytes. Each line's comment is the
// instruction in GNU as's operand order; the encodings were taken from GNU as 2.40 (objdump of the same lines)
// and TestAMXMulMatchesRoundedSums fails on a wrong one. Only registers AX, BX, CX, DX, SI, DI appear in the
// encoded operands, so no VEX.R/X/B bit is needed.

// func amxStrip(cfg *[64]byte, a *uint16, lda int, b *uint32, panel int, c *float32, ldc int, kBlocks, mBlocks, acc int)
// c[r][j] = Σ_k a[r][k]·b[k][j] for rows r < 32·mBlocks and columns j < 32, k < 32·kBlocks, or c[r][j] += the sum
// where acc ≠ 0: a is bfloat16, row-major, its rows lda bytes apart; b is two 16-column panels (panel bytes apart)
// of bfloat16 pairs in TDPBF16PS's layout, 16 uint32s (64 bytes) a pair row, the first panel at b; c's rows are
// ldc bytes apart. cfg is the tile configuration (palette 1, eight tiles of 16 rows of 64 bytes). Each 32×32
// block of c sits in tiles 0-3 (rows 0-15 and 16-31 by columns 0-15 and 16-31) through the loop over k; tiles
// 4-5 hold a block's two 16-row halves of 32 k's of a and tiles 6-7 its two panels' 16 pair rows of b. The tiles
// are released before returning, so no tile state outlives the call. kBlocks and mBlocks must be ≥ 1.
TEXT ·amxStrip(SB), NOSPLIT, $0-80
	MOVQ cfg+0(FP), AX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
	MOVQ a+8(FP), R8 // the block's first row of a
	MOVQ c+40(FP), R9 // the block's first row of c
	MOVQ mBlocks+64(FP), R10
	MOVQ lda+16(FP), R12
	SHLQ $5, R12 // 32 rows of a
	MOVQ ldc+48(FP), R13
	SHLQ $5, R13 // 32 rows of c

mloop:
	CMPQ acc+72(FP), $0
	JNE  loadc
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero %tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero %tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero %tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero %tmm3
	JMP  ab

loadc:
	MOVQ ldc+48(FP), CX
	MOVQ R9, SI // c's rows 0-15, columns 0-15
	LEAQ 64(R9), DI // rows 0-15, columns 16-31
	MOVQ CX, DX
	SHLQ $4, DX
	ADDQ R9, DX // rows 16-31, columns 0-15
	LEAQ 64(DX), BX // rows 16-31, columns 16-31
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x0e // tileloadd (%rsi,%rcx,1), %tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x0f // tileloadd (%rdi,%rcx,1), %tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x0a // tileloadd (%rdx,%rcx,1), %tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x0b // tileloadd (%rbx,%rcx,1), %tmm3

ab:
	MOVQ lda+16(FP), CX
	MOVQ R8, SI // rows 0-15 of a
	MOVQ CX, DI
	SHLQ $4, DI
	ADDQ R8, DI // rows 16-31 of a
	MOVQ b+24(FP), DX // columns 0-15 of b
	MOVQ DX, BX
	ADDQ panel+32(FP), BX // columns 16-31 of b
	MOVQ $64, AX // b's pair rows are 64 bytes apart
	MOVQ kBlocks+56(FP), R11

kloop:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x0e // tileloadd (%rsi,%rcx,1), %tmm4
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x0f // tileloadd (%rdi,%rcx,1), %tmm5
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x02 // tileloadd (%rdx,%rax,1), %tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x03 // tileloadd (%rbx,%rax,1), %tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps %tmm6, %tmm4, %tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // tdpbf16ps %tmm7, %tmm4, %tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // tdpbf16ps %tmm6, %tmm5, %tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // tdpbf16ps %tmm7, %tmm5, %tmm3
	ADDQ $64, SI // the next 32 k's of a
	ADDQ $64, DI
	ADDQ $1024, DX // the next 16 pair rows of b
	ADDQ $1024, BX
	DECQ R11
	JNZ  kloop

	MOVQ ldc+48(FP), CX
	MOVQ R9, SI // c's rows 0-15, columns 0-15
	LEAQ 64(R9), DI // rows 0-15, columns 16-31
	MOVQ CX, DX
	SHLQ $4, DX
	ADDQ R9, DX // rows 16-31, columns 0-15
	LEAQ 64(DX), BX // rows 16-31, columns 16-31
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x0e // tilestored %tmm0, (%rsi,%rcx,1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x0f // tilestored %tmm1, (%rdi,%rcx,1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x0a // tilestored %tmm2, (%rdx,%rcx,1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x1c; BYTE $0x0b // tilestored %tmm3, (%rbx,%rcx,1)
	ADDQ R12, R8
	ADDQ R13, R9
	DECQ R10
	JNZ  mloop

	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
	RET

// ROUND16(u, t) rounds the 16 float32s in u to bfloat16 (to nearest, ties to even, as ToBF16) and leaves each
// one's 16 bits in the high half of its dword, the low half not yet cleared: u += 0x7fff + (u>>16)&1. Z30 holds
// 0x7fff in every dword and Z29 holds 1; t is a scratch register.
#define ROUND16(u, t) \
	VPSRLD $16, u, t \
	VPANDD Z29, t, t \
	VPADDD Z30, u, u \
	VPADDD t, u, u

// ROUNDCONSTS loads ROUND16's constants: 0x7fff into every dword of Z30 and 1 into every dword of Z29 (BX is
// scratch).
#define ROUNDCONSTS \
	MOVL $0x7fff, BX \
	VPBROADCASTD BX, Z30 \
	MOVL $1, BX \
	VPBROADCASTD BX, Z29

// SPLITCONSTS loads SPLIT16's constants: ROUND16's and 0xffff0000 into every dword of Z28.
#define SPLITCONSTS \
	ROUNDCONSTS \
	MOVL $0xffff0000, BX \
	VPBROADCASTD BX, Z28

// func amxRoundPairs(lo, hi *float32, dst *uint32, n, dstStride int)
// dst[j] = ToBF16(lo[j]) | ToBF16(hi[j])<<16 for j < n, a multiple of 16, where dst jumps dstStride bytes after
// every 16 values (to the next panel of amxB) and lo, hi are contiguous. AVX-512F.
TEXT ·amxRoundPairs(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), SI
	MOVQ hi+8(FP), DI
	MOVQ dst+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ dstStride+32(FP), R8
	SHRQ $4, CX
	JZ   pairsDone
	SPLITCONSTS

pairsLoop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 (DI), Z1
	ROUND16(Z0, Z2)
	ROUND16(Z1, Z3)
	VPSRLD $16, Z0, Z0
	VPANDD Z28, Z1, Z1
	VPORD  Z1, Z0, Z0
	VMOVDQU32 Z0, (DX)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ R8, DX
	DECQ CX
	JNZ  pairsLoop

pairsDone:
	VZEROUPPER
	RET

// func amxRoundRow(x *float32, dst *uint16, n int)
// dst[j] = ToBF16(x[j]) for j < n, a multiple of 16. AVX-512F.
TEXT ·amxRoundRow(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DX
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   rowDone
	ROUNDCONSTS

rowLoop:
	VMOVDQU32 (SI), Z0
	ROUND16(Z0, Z2)
	VPSRLD  $16, Z0, Z0
	VPMOVDW Z0, (DX)
	ADDQ $64, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  rowLoop

rowDone:
	VZEROUPPER
	RET

// SPLIT16(u, h, t) splits the 16 float32s x in u into two bfloat16s each, x ≈ hi + lo: h = hi = x rounded to
// bfloat16 (ROUND16), as a float32 with its low half cleared; u = lo = x − hi (exact in float32) rounded to
// bfloat16, its 16 bits in the high half of each dword, the low half not yet cleared. Z30, Z29 as ROUND16; Z28
// holds 0xffff0000 in every dword; t is a scratch register.
#define SPLIT16(u, h, t) \
	VMOVDQA32 u, h \
	ROUND16(h, t) \
	VPANDD Z28, h, h \
	VSUBPS h, u, u \
	ROUND16(u, t)

// func amxSplitRow(x *float32, hi, lo *uint16, n int)
// hi[j] = ToBF16(x[j]) and lo[j] = ToBF16(x[j] − FromBF16(hi[j])) for j < n, a multiple of 16. AVX-512F.
TEXT ·amxSplitRow(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ hi+8(FP), DI
	MOVQ lo+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   splitRowDone
	SPLITCONSTS

splitRowLoop:
	VMOVDQU32 (SI), Z0
	SPLIT16(Z0, Z1, Z2)
	VPSRLD  $16, Z1, Z1
	VPMOVDW Z1, (DI)
	VPSRLD  $16, Z0, Z0
	VPMOVDW Z0, (DX)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  splitRowLoop

splitRowDone:
	VZEROUPPER
	RET

// func amxSplitPairs(even, odd *float32, hi, lo *uint32, n, dstStride int)
// Splits two contiguous runs of n float32s (n a multiple of 16) as amxSplitRow does and writes bfloat16 pairs,
// even's in the low halves: hi[j] = hi(even[j]) | hi(odd[j])<<16 and lo[j] = lo(even[j]) | lo(odd[j])<<16,
// where both destinations jump dstStride bytes after every 16 values. AVX-512F.
TEXT ·amxSplitPairs(SB), NOSPLIT, $0-48
	MOVQ even+0(FP), SI
	MOVQ odd+8(FP), DI
	MOVQ hi+16(FP), DX
	MOVQ lo+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ dstStride+40(FP), R10
	SHRQ $4, CX
	JZ   splitPairsDone
	SPLITCONSTS

splitPairsLoop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 (DI), Z1
	SPLIT16(Z0, Z2, Z4)
	SPLIT16(Z1, Z3, Z4)
	VPSRLD $16, Z2, Z2
	VPORD  Z3, Z2, Z2
	VMOVDQU32 Z2, (DX)
	VPSRLD $16, Z0, Z0
	VPANDD Z28, Z1, Z1
	VPORD  Z1, Z0, Z0
	VMOVDQU32 Z0, (R8)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ R10, DX
	ADDQ R10, R8
	DECQ CX
	JNZ  splitPairsLoop

splitPairsDone:
	VZEROUPPER
	RET

// iota16 holds the dwords 0, 1, …, 15.
DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// STRIDES sets the 16 dwords of Z3 to j·stride for j < 16, stride in AX, the gather's indices (Z1, Z2 scratch).
#define STRIDES \
	VPBROADCASTD AX, Z1 \
	VMOVDQU32 iota16<>(SB), Z2 \
	VPMULLD Z1, Z2, Z3

// func amxGatherPairs(src *uint32, stride int, dst *uint32, pairs int)
// dst[p*16+c] = src[c*stride+p] for p < pairs and c < 16: the pair rows of a 16-column panel of amxB from 16
// rows of bfloat16 pairs stride uint32s apart (a transposed matrix's rows, rounded). AVX-512F.
TEXT ·amxGatherPairs(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ dst+16(FP), DI
	MOVQ pairs+24(FP), CX
	TESTQ CX, CX
	JZ   gatherDone
	STRIDES // c·stride

gatherLoop:
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z3*4), K1, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ $4, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  gatherLoop

gatherDone:
	VZEROUPPER
	RET

// func amxGatherRoundRow(x *float32, stride int, dst *uint16, n int)
// dst[j] = ToBF16(x[j*stride]) for j < n, a multiple of 16: a row of a transposed matrix, gathered 16 values at a
// time. AVX-512F.
TEXT ·amxGatherRoundRow(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ dst+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   gatherRoundDone
	STRIDES
	SHLQ $6, AX        // 16 values on: 16·stride·4 bytes
	ROUNDCONSTS

gatherRoundLoop:
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z3*4), K1, Z0
	ROUND16(Z0, Z2)
	VPSRLD  $16, Z0, Z0
	VPMOVDW Z0, (DX)
	ADDQ AX, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  gatherRoundLoop

gatherRoundDone:
	VZEROUPPER
	RET

// func amxGatherSplitRow(x *float32, stride int, hi, lo *uint16, n int)
// amxSplitRow of x[j*stride] for j < n, a multiple of 16, gathered 16 values at a time. AVX-512F.
TEXT ·amxGatherSplitRow(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ hi+16(FP), DI
	MOVQ lo+24(FP), DX
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	JZ   gatherSplitDone
	STRIDES
	SHLQ $6, AX        // 16 values on: 16·stride·4 bytes
	SPLITCONSTS

gatherSplitLoop:
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z3*4), K1, Z0
	SPLIT16(Z0, Z1, Z2)
	VPSRLD  $16, Z1, Z1
	VPMOVDW Z1, (DI)
	VPSRLD  $16, Z0, Z0
	VPMOVDW Z0, (DX)
	ADDQ AX, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  gatherSplitLoop

gatherSplitDone:
	VZEROUPPER
	RET
