// Hand-written AVX2+FMA kernels for exp and tanh; the constant tables are Cephes expf's and tanhf's, eight lanes each.

//go:build amd64 && !purego

#include "textflag.h"

DATA expconst<>+0(SB)/4, $0x42b0c0a5
DATA expconst<>+4(SB)/4, $0x42b0c0a5
DATA expconst<>+8(SB)/4, $0x42b0c0a5
DATA expconst<>+12(SB)/4, $0x42b0c0a5
DATA expconst<>+16(SB)/4, $0x42b0c0a5
DATA expconst<>+20(SB)/4, $0x42b0c0a5
DATA expconst<>+24(SB)/4, $0x42b0c0a5
DATA expconst<>+28(SB)/4, $0x42b0c0a5
DATA expconst<>+32(SB)/4, $0xc2aeac50
DATA expconst<>+36(SB)/4, $0xc2aeac50
DATA expconst<>+40(SB)/4, $0xc2aeac50
DATA expconst<>+44(SB)/4, $0xc2aeac50
DATA expconst<>+48(SB)/4, $0xc2aeac50
DATA expconst<>+52(SB)/4, $0xc2aeac50
DATA expconst<>+56(SB)/4, $0xc2aeac50
DATA expconst<>+60(SB)/4, $0xc2aeac50
DATA expconst<>+64(SB)/4, $0x3fb8aa3b
DATA expconst<>+68(SB)/4, $0x3fb8aa3b
DATA expconst<>+72(SB)/4, $0x3fb8aa3b
DATA expconst<>+76(SB)/4, $0x3fb8aa3b
DATA expconst<>+80(SB)/4, $0x3fb8aa3b
DATA expconst<>+84(SB)/4, $0x3fb8aa3b
DATA expconst<>+88(SB)/4, $0x3fb8aa3b
DATA expconst<>+92(SB)/4, $0x3fb8aa3b
DATA expconst<>+96(SB)/4, $0x3f000000
DATA expconst<>+100(SB)/4, $0x3f000000
DATA expconst<>+104(SB)/4, $0x3f000000
DATA expconst<>+108(SB)/4, $0x3f000000
DATA expconst<>+112(SB)/4, $0x3f000000
DATA expconst<>+116(SB)/4, $0x3f000000
DATA expconst<>+120(SB)/4, $0x3f000000
DATA expconst<>+124(SB)/4, $0x3f000000
DATA expconst<>+128(SB)/4, $0x3f318000
DATA expconst<>+132(SB)/4, $0x3f318000
DATA expconst<>+136(SB)/4, $0x3f318000
DATA expconst<>+140(SB)/4, $0x3f318000
DATA expconst<>+144(SB)/4, $0x3f318000
DATA expconst<>+148(SB)/4, $0x3f318000
DATA expconst<>+152(SB)/4, $0x3f318000
DATA expconst<>+156(SB)/4, $0x3f318000
DATA expconst<>+160(SB)/4, $0xb95e8083
DATA expconst<>+164(SB)/4, $0xb95e8083
DATA expconst<>+168(SB)/4, $0xb95e8083
DATA expconst<>+172(SB)/4, $0xb95e8083
DATA expconst<>+176(SB)/4, $0xb95e8083
DATA expconst<>+180(SB)/4, $0xb95e8083
DATA expconst<>+184(SB)/4, $0xb95e8083
DATA expconst<>+188(SB)/4, $0xb95e8083
DATA expconst<>+192(SB)/4, $0x39506967
DATA expconst<>+196(SB)/4, $0x39506967
DATA expconst<>+200(SB)/4, $0x39506967
DATA expconst<>+204(SB)/4, $0x39506967
DATA expconst<>+208(SB)/4, $0x39506967
DATA expconst<>+212(SB)/4, $0x39506967
DATA expconst<>+216(SB)/4, $0x39506967
DATA expconst<>+220(SB)/4, $0x39506967
DATA expconst<>+224(SB)/4, $0x3ab743ce
DATA expconst<>+228(SB)/4, $0x3ab743ce
DATA expconst<>+232(SB)/4, $0x3ab743ce
DATA expconst<>+236(SB)/4, $0x3ab743ce
DATA expconst<>+240(SB)/4, $0x3ab743ce
DATA expconst<>+244(SB)/4, $0x3ab743ce
DATA expconst<>+248(SB)/4, $0x3ab743ce
DATA expconst<>+252(SB)/4, $0x3ab743ce
DATA expconst<>+256(SB)/4, $0x3c088908
DATA expconst<>+260(SB)/4, $0x3c088908
DATA expconst<>+264(SB)/4, $0x3c088908
DATA expconst<>+268(SB)/4, $0x3c088908
DATA expconst<>+272(SB)/4, $0x3c088908
DATA expconst<>+276(SB)/4, $0x3c088908
DATA expconst<>+280(SB)/4, $0x3c088908
DATA expconst<>+284(SB)/4, $0x3c088908
DATA expconst<>+288(SB)/4, $0x3d2aa9c1
DATA expconst<>+292(SB)/4, $0x3d2aa9c1
DATA expconst<>+296(SB)/4, $0x3d2aa9c1
DATA expconst<>+300(SB)/4, $0x3d2aa9c1
DATA expconst<>+304(SB)/4, $0x3d2aa9c1
DATA expconst<>+308(SB)/4, $0x3d2aa9c1
DATA expconst<>+312(SB)/4, $0x3d2aa9c1
DATA expconst<>+316(SB)/4, $0x3d2aa9c1
DATA expconst<>+320(SB)/4, $0x3e2aaaaa
DATA expconst<>+324(SB)/4, $0x3e2aaaaa
DATA expconst<>+328(SB)/4, $0x3e2aaaaa
DATA expconst<>+332(SB)/4, $0x3e2aaaaa
DATA expconst<>+336(SB)/4, $0x3e2aaaaa
DATA expconst<>+340(SB)/4, $0x3e2aaaaa
DATA expconst<>+344(SB)/4, $0x3e2aaaaa
DATA expconst<>+348(SB)/4, $0x3e2aaaaa
DATA expconst<>+352(SB)/4, $0x3f000000
DATA expconst<>+356(SB)/4, $0x3f000000
DATA expconst<>+360(SB)/4, $0x3f000000
DATA expconst<>+364(SB)/4, $0x3f000000
DATA expconst<>+368(SB)/4, $0x3f000000
DATA expconst<>+372(SB)/4, $0x3f000000
DATA expconst<>+376(SB)/4, $0x3f000000
DATA expconst<>+380(SB)/4, $0x3f000000
DATA expconst<>+384(SB)/4, $0x3f800000
DATA expconst<>+388(SB)/4, $0x3f800000
DATA expconst<>+392(SB)/4, $0x3f800000
DATA expconst<>+396(SB)/4, $0x3f800000
DATA expconst<>+400(SB)/4, $0x3f800000
DATA expconst<>+404(SB)/4, $0x3f800000
DATA expconst<>+408(SB)/4, $0x3f800000
DATA expconst<>+412(SB)/4, $0x3f800000
DATA expconst<>+416(SB)/4, $127
DATA expconst<>+420(SB)/4, $127
DATA expconst<>+424(SB)/4, $127
DATA expconst<>+428(SB)/4, $127
DATA expconst<>+432(SB)/4, $127
DATA expconst<>+436(SB)/4, $127
DATA expconst<>+440(SB)/4, $127
DATA expconst<>+444(SB)/4, $127
GLOBL expconst<>(SB), RODATA|NOPTR, $448

// tanhconst, eight lanes each: |x| mask, sign mask, 2, 0.625, then the Cephes tanhf polynomial P from its
// highest coefficient down.
DATA tanhconst<>+0(SB)/4, $0x7fffffff
DATA tanhconst<>+4(SB)/4, $0x7fffffff
DATA tanhconst<>+8(SB)/4, $0x7fffffff
DATA tanhconst<>+12(SB)/4, $0x7fffffff
DATA tanhconst<>+16(SB)/4, $0x7fffffff
DATA tanhconst<>+20(SB)/4, $0x7fffffff
DATA tanhconst<>+24(SB)/4, $0x7fffffff
DATA tanhconst<>+28(SB)/4, $0x7fffffff
DATA tanhconst<>+32(SB)/4, $0x80000000
DATA tanhconst<>+36(SB)/4, $0x80000000
DATA tanhconst<>+40(SB)/4, $0x80000000
DATA tanhconst<>+44(SB)/4, $0x80000000
DATA tanhconst<>+48(SB)/4, $0x80000000
DATA tanhconst<>+52(SB)/4, $0x80000000
DATA tanhconst<>+56(SB)/4, $0x80000000
DATA tanhconst<>+60(SB)/4, $0x80000000
DATA tanhconst<>+64(SB)/4, $0x40000000
DATA tanhconst<>+68(SB)/4, $0x40000000
DATA tanhconst<>+72(SB)/4, $0x40000000
DATA tanhconst<>+76(SB)/4, $0x40000000
DATA tanhconst<>+80(SB)/4, $0x40000000
DATA tanhconst<>+84(SB)/4, $0x40000000
DATA tanhconst<>+88(SB)/4, $0x40000000
DATA tanhconst<>+92(SB)/4, $0x40000000
DATA tanhconst<>+96(SB)/4, $0x3f200000
DATA tanhconst<>+100(SB)/4, $0x3f200000
DATA tanhconst<>+104(SB)/4, $0x3f200000
DATA tanhconst<>+108(SB)/4, $0x3f200000
DATA tanhconst<>+112(SB)/4, $0x3f200000
DATA tanhconst<>+116(SB)/4, $0x3f200000
DATA tanhconst<>+120(SB)/4, $0x3f200000
DATA tanhconst<>+124(SB)/4, $0x3f200000
DATA tanhconst<>+128(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+132(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+136(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+140(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+144(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+148(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+152(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+156(SB)/4, $0xbbbaf0ea
DATA tanhconst<>+160(SB)/4, $0x3ca9134e
DATA tanhconst<>+164(SB)/4, $0x3ca9134e
DATA tanhconst<>+168(SB)/4, $0x3ca9134e
DATA tanhconst<>+172(SB)/4, $0x3ca9134e
DATA tanhconst<>+176(SB)/4, $0x3ca9134e
DATA tanhconst<>+180(SB)/4, $0x3ca9134e
DATA tanhconst<>+184(SB)/4, $0x3ca9134e
DATA tanhconst<>+188(SB)/4, $0x3ca9134e
DATA tanhconst<>+192(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+196(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+200(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+204(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+208(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+212(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+216(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+220(SB)/4, $0xbd5c1e2d
DATA tanhconst<>+224(SB)/4, $0x3e088393
DATA tanhconst<>+228(SB)/4, $0x3e088393
DATA tanhconst<>+232(SB)/4, $0x3e088393
DATA tanhconst<>+236(SB)/4, $0x3e088393
DATA tanhconst<>+240(SB)/4, $0x3e088393
DATA tanhconst<>+244(SB)/4, $0x3e088393
DATA tanhconst<>+248(SB)/4, $0x3e088393
DATA tanhconst<>+252(SB)/4, $0x3e088393
DATA tanhconst<>+256(SB)/4, $0xbeaaaa99
DATA tanhconst<>+260(SB)/4, $0xbeaaaa99
DATA tanhconst<>+264(SB)/4, $0xbeaaaa99
DATA tanhconst<>+268(SB)/4, $0xbeaaaa99
DATA tanhconst<>+272(SB)/4, $0xbeaaaa99
DATA tanhconst<>+276(SB)/4, $0xbeaaaa99
DATA tanhconst<>+280(SB)/4, $0xbeaaaa99
DATA tanhconst<>+284(SB)/4, $0xbeaaaa99
GLOBL tanhconst<>(SB), RODATA|NOPTR, $288

// EXP_Y0 sets Y2 = e**Y0 lane by lane, with the constants of expconst in Y8..Y15 (loaded as expAVX2 does) and
// Y0, Y1, Y3 and Y4 as scratch: clamp x to the float32 range (a NaN is kept), fx = x·log2e + 0.5, n = floor(fx),
// r = x − n·c1 − n·c2, p = the degree-6 polynomial in r, y = p·r² + r + 1, times 2**n built from the exponent bits.
#define EXP_Y0 \
	VMINPS  Y0, Y8, Y0; \
	VMAXPS  Y0, Y9, Y0; \
	VMOVAPS Y0, Y1; \
	VFMADD213PS Y11, Y10, Y1; \
	VROUNDPS $1, Y1, Y1; \
	VFNMADD231PS Y12, Y1, Y0; \
	VFNMADD231PS Y13, Y1, Y0; \
	VMOVUPS expconst<>+192(SB), Y2; \
	VFMADD213PS expconst<>+224(SB), Y0, Y2; \
	VFMADD213PS expconst<>+256(SB), Y0, Y2; \
	VFMADD213PS expconst<>+288(SB), Y0, Y2; \
	VFMADD213PS expconst<>+320(SB), Y0, Y2; \
	VFMADD213PS expconst<>+352(SB), Y0, Y2; \
	VMULPS  Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VADDPS  Y14, Y2, Y2; \
	VCVTPS2DQ Y1, Y4; \
	VPADDD  Y15, Y4, Y4; \
	VPSLLD  $23, Y4, Y4; \
	VMULPS  Y4, Y2, Y2

// LOAD_EXP_CONSTANTS fills Y8..Y15 for EXP_Y0.
#define LOAD_EXP_CONSTANTS \
	VMOVUPS expconst<>+0(SB), Y8; \
	VMOVUPS expconst<>+32(SB), Y9; \
	VMOVUPS expconst<>+64(SB), Y10; \
	VMOVUPS expconst<>+96(SB), Y11; \
	VMOVUPS expconst<>+128(SB), Y12; \
	VMOVUPS expconst<>+160(SB), Y13; \
	VMOVUPS expconst<>+384(SB), Y14; \
	VMOVUPS expconst<>+416(SB), Y15

// func expAVX2(xs []float32)
// Overwrites the first len(xs) &^ 7 values with e**x, eight at a time.
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	SHRQ $3, CX
	JZ   done
	LOAD_EXP_CONSTANTS
loop:
	VMOVUPS (SI), Y0
	EXP_Y0
	VMOVUPS Y2, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     loop
	VZEROUPPER
done:
	RET

// func tanhAVX2(xs []float32)
// Overwrites the first len(xs) &^ 7 values with tanh x, eight at a time, as tanhf does it: x + x·z·P(z) with
// z = x² where |x| < 0.625, and sign(x)·(1 − 2/(e**2|x| + 1)) elsewhere (a NaN stays NaN). Both are computed
// for every lane and blended.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	SHRQ $3, CX
	JZ   tdone
	LOAD_EXP_CONSTANTS
tloop:
	VMOVUPS (SI), Y5                          // x
	VANDPS  tanhconst<>+0(SB), Y5, Y6         // a = |x|
	VMULPS  Y5, Y5, Y7                        // z = x²
	VMOVUPS tanhconst<>+128(SB), Y2
	VFMADD213PS tanhconst<>+160(SB), Y7, Y2   // P(z), highest coefficient first
	VFMADD213PS tanhconst<>+192(SB), Y7, Y2
	VFMADD213PS tanhconst<>+224(SB), Y7, Y2
	VFMADD213PS tanhconst<>+256(SB), Y7, Y2
	VMULPS  Y7, Y5, Y7                        // x·z
	VFMADD213PS Y5, Y2, Y7                    // small = x·z·P(z) + x
	VADDPS  Y6, Y6, Y0                        // 2a
	EXP_Y0                                    // Y2 = e**2a
	VADDPS  Y14, Y2, Y2                       // e**2a + 1
	VMOVUPS tanhconst<>+64(SB), Y3
	VDIVPS  Y2, Y3, Y3                        // 2/(e**2a + 1)
	VSUBPS  Y3, Y14, Y3                       // 1 − 2/(e**2a + 1)
	VANDPS  tanhconst<>+32(SB), Y5, Y4        // the sign bit of x
	VXORPS  Y4, Y3, Y3                        // large = sign(x)·(1 − 2/(e**2a + 1))
	VCMPPS  $1, tanhconst<>+96(SB), Y6, Y4    // a < 0.625 (false for NaN)
	VBLENDVPS Y4, Y7, Y3, Y3                  // small where a < 0.625, large elsewhere
	VMOVUPS Y3, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     tloop
	VZEROUPPER
tdone:
	RET

// func expShiftAVX2(dst, src []float32, shift float32)
// Sets the first len(src) &^ 7 values of dst to e**(src − shift), eight at a time: each difference is rounded to
// float32 first, so a value comes out as storing src − shift and then expAVX2 would make it.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	JZ   sdone
	VBROADCASTSS shift+48(FP), Y5
	LOAD_EXP_CONSTANTS
sloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y5, Y0, Y0
	EXP_Y0
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     sloop
	VZEROUPPER
sdone:
	RET

// func maxAVX2(xs []float32, m *[8]float32)
// Takes the first len(xs) &^ 7 values into the eight running maxima m, value i into m[i mod 8], in order: each
// becomes the value where the value is larger, as Max's loop does (VMAXPS keeps its second operand, the running
// maximum, when either is NaN or both are zeros).
TEXT ·maxAVX2(SB), NOSPLIT, $0-32
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	MOVQ m+24(FP), DI
	SHRQ $3, CX
	JZ   mdone
	VMOVUPS (DI), Y1
mloop:
	VMOVUPS (SI), Y0
	VMAXPS  Y1, Y0, Y1
	ADDQ    $32, SI
	DECQ    CX
	JNZ     mloop
	VMOVUPS Y1, (DI)
	VZEROUPPER
mdone:
	RET

// func scaleAVX2(xs []float32, a float32)
// Multiplies the first len(xs) &^ 7 values by a, eight at a time.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	SHRQ $3, CX
	JZ   cdone
	VBROADCASTSS a+24(FP), Y1
cloop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     cloop
	VZEROUPPER
cdone:
	RET
