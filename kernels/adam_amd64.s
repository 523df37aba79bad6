//go:build amd64 && !purego

#include "textflag.h"

// func adamAVX(w, g, m, v []float32, c *AdamCoeffs)
// One Adam update of the first len(w) &^ 7 values, eight at a time, each operation rounded in the order of
// AdamUpdate's scalar loop (no fused multiply-adds), so both give the same bits. AdamCoeffs' fields are eight
// float32s: Scale, Beta1, Beta2, OneMinusBeta1, OneMinusBeta2, StepSize, SqrtC2, Eps.
TEXT ·adamAVX(SB), NOSPLIT, $0-104
	MOVQ w_base+0(FP), DI
	MOVQ w_len+8(FP), CX
	MOVQ g_base+24(FP), SI
	MOVQ m_base+48(FP), R8
	MOVQ v_base+72(FP), R9
	MOVQ c+96(FP), AX
	SHRQ $3, CX
	JZ   done
	VBROADCASTSS 0(AX), Y8   // Scale
	VBROADCASTSS 4(AX), Y9   // Beta1
	VBROADCASTSS 8(AX), Y10  // Beta2
	VBROADCASTSS 12(AX), Y11 // OneMinusBeta1
	VBROADCASTSS 16(AX), Y12 // OneMinusBeta2
	VBROADCASTSS 20(AX), Y13 // StepSize
	VBROADCASTSS 24(AX), Y14 // SqrtC2
	VBROADCASTSS 28(AX), Y15 // Eps
loop:
	VMOVUPS (SI), Y0
	VMULPS  Y8, Y0, Y0       // g·Scale
	VMULPS  (R8), Y9, Y1     // Beta1·m
	VMULPS  Y0, Y11, Y2      // OneMinusBeta1·g
	VADDPS  Y2, Y1, Y1       // m
	VMOVUPS Y1, (R8)
	VMULPS  Y0, Y12, Y3      // OneMinusBeta2·g
	VMULPS  Y0, Y3, Y3       // (OneMinusBeta2·g)·g
	VMULPS  (R9), Y10, Y4    // Beta2·v
	VADDPS  Y3, Y4, Y4       // v
	VMOVUPS Y4, (R9)
	VSQRTPS Y4, Y4           // √v
	VDIVPS  Y14, Y4, Y4      // √v / SqrtC2
	VADDPS  Y15, Y4, Y4      // + Eps
	VMULPS  Y1, Y13, Y5      // StepSize·m
	VDIVPS  Y4, Y5, Y5       // / denominator
	VMOVUPS (DI), Y6
	VSUBPS  Y5, Y6, Y6       // w − update
	VMOVUPS Y6, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     loop
	VZEROUPPER
done:
	RET
