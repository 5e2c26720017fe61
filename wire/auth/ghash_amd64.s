#include "textflag.h"

// GHASH for package auth (ghash.go explains the representation): each
// 16-byte block is byte-reversed into a 128-bit integer, multiplied by a
// power of H kept as H^i * x^-1, and 16 products are summed unreduced
// before one reduction modulo x^128 + x^7 + x^2 + x + 1.

// Per 128-bit lane: byte i takes byte 15-i.
DATA bswapMask<>+0x00(SB)/8, $0x08090a0b0c0d0e0f
DATA bswapMask<>+0x08(SB)/8, $0x0001020304050607
DATA bswapMask<>+0x10(SB)/8, $0x08090a0b0c0d0e0f
DATA bswapMask<>+0x18(SB)/8, $0x0001020304050607
GLOBL bswapMask<>(SB), RODATA|NOPTR, $32

DATA polyK<>+0x00(SB)/8, $0xc200000000000000
DATA polyK<>+0x08(SB)/8, $0xc200000000000000
GLOBL polyK<>(SB), RODATA|NOPTR, $16

// ACC multiplies the two blocks of D by the two powers at K and adds the
// products' low, high and middle parts to Y4, Y5 and Y6. Clobbers Y7.
#define ACC(D, K) \
	VPCLMULQDQ $0x00, K, D, Y7; \
	VPXOR      Y7, Y4, Y4; \
	VPCLMULQDQ $0x11, K, D, Y7; \
	VPXOR      Y7, Y5, Y5; \
	VPCLMULQDQ $0x01, K, D, Y7; \
	VPXOR      Y7, Y6, Y6; \
	VPCLMULQDQ $0x10, K, D, Y7; \
	VPXOR      Y7, Y6, Y6

// LOADBLOCKS loads two blocks from M into D, byte-reversed per lane.
#define LOADBLOCKS(M, D) \
	VMOVDQU M, D; \
	VPSHUFB Y15, D, D

// PAIR multiplies the blocks at OFF(DX) by the powers at OFF(SI) and adds
// the products, through D.
#define PAIR(OFF, D) \
	LOADBLOCKS(OFF(DX), D); \
	ACC(D, OFF(SI))

// REDUCE adds the two lanes of Y4, Y5 and Y6 and reduces them (REDUCE128).
#define REDUCE \
	VEXTRACTI128 $1, Y4, X7; \
	VPXOR        X7, X4, X4; \
	VEXTRACTI128 $1, Y5, X7; \
	VPXOR        X7, X5, X5; \
	VEXTRACTI128 $1, Y6, X7; \
	VPXOR        X7, X6, X6; \
	REDUCE128

// REDUCE128 forms the 256-bit product (X5:X4) of the low, high and middle
// parts in X4, X5 and X6 and reduces it into X8. Clobbers X4 to X7.
#define REDUCE128 \
	VPSLLDQ      $8, X6, X7; \
	VPXOR        X7, X4, X4; \
	VPSRLDQ      $8, X6, X7; \
	VPXOR        X7, X5, X5; \
	VPCLMULQDQ   $0x00, X14, X4, X7; \
	VPSHUFD      $0x4e, X4, X4; \
	VPXOR        X7, X4, X4; \
	VPCLMULQDQ   $0x00, X14, X4, X7; \
	VPSHUFD      $0x4e, X4, X4; \
	VPXOR        X7, X4, X4; \
	VPXOR        X5, X4, X8

// func ghashAVX2(y *[2]uint64, t *[2]uint64, p *byte, n int)
TEXT ·ghashAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ t+8(FP), SI
	MOVQ p+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVDQU (DI), X8 // the running value; its upper lane is zero
	VMOVDQU bswapMask<>(SB), Y15
	VMOVDQU polyK<>(SB), X14
	CMPQ    CX, $16
	JB      tail

loop16:
	// Blocks 3 to 16 first: they do not wait for the running value.
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	PAIR(32, Y0)
	PAIR(64, Y1)
	PAIR(96, Y2)
	PAIR(128, Y3)
	PAIR(160, Y0)
	PAIR(192, Y1)
	PAIR(224, Y2)
	LOADBLOCKS(0(DX), Y3)
	VPXOR Y8, Y3, Y3
	ACC(Y3, 0(SI))
	REDUCE
	ADDQ $256, DX
	SUBQ $16, CX
	CMPQ CX, $16
	JAE  loop16

tail:
	// r = CX < 16 blocks left: block i takes t[16-r+i] = H^(r-i).
	TESTQ CX, CX
	JZ    done
	MOVQ  $16, AX
	SUBQ  CX, AX
	SHLQ  $4, AX
	ADDQ  AX, SI
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	TESTQ $1, CX
	JZ    pairs

	// An odd count: the first block alone.
	VMOVDQU    (DX), X0
	VPSHUFB    X15, X0, X0
	VPXOR      X8, X0, X0
	VPXOR      X8, X8, X8
	VMOVDQU    (SI), X1
	VPCLMULQDQ $0x00, X1, X0, X4
	VPCLMULQDQ $0x11, X1, X0, X5
	VPCLMULQDQ $0x01, X1, X0, X6
	VPCLMULQDQ $0x10, X1, X0, X7
	VPXOR      X7, X6, X6
	ADDQ       $16, DX
	ADDQ       $16, SI
	DECQ       CX
	JZ         reduce

pairs:
	LOADBLOCKS((DX), Y0)
	VPXOR Y8, Y0, Y0
	VPXOR Y8, Y8, Y8
	ACC(Y0, (SI))
	ADDQ  $32, DX
	ADDQ  $32, SI
	SUBQ  $2, CX
	JNZ   pairs

reduce:
	REDUCE

done:
	VMOVDQU X8, (DI)
	VZEROUPPER
	RET

// MULACC multiplies the four blocks of D by the four powers in K and adds
// the products' low, high and middle parts to Z4, Z5 and Z6. Clobbers Z24
// to Z27.
#define MULACC(D, K) \
	VPCLMULQDQ $0x00, K, D, Z24; \
	VPCLMULQDQ $0x11, K, D, Z25; \
	VPCLMULQDQ $0x01, K, D, Z26; \
	VPCLMULQDQ $0x10, K, D, Z27; \
	VPXORQ     Z24, Z4, Z4; \
	VPXORQ     Z25, Z5, Z5; \
	VPTERNLOGQ $0x96, Z26, Z27, Z6

// LOAD4 loads four blocks from M into D, byte-reversed per lane.
#define LOAD4(M, D) \
	VMOVDQU64 M, D; \
	VPSHUFB   Z15, D, D

// MASKED4 multiplies the blocks at M that mask K1 selects (two bits per
// block; the others read as zero, and are not read) by the powers at P,
// folds the running value X8 into the first block and clears it (so it is
// added once), and adds the products (MULACC) through Z0 and Z1.
#define MASKED4(M, P) \
	VMOVDQU64.Z M, K1, Z0; \
	VMOVDQU64.Z P, K1, Z1; \
	VPSHUFB     Z15, Z0, Z0; \
	VPXORQ      Z8, Z0, Z0; \
	VPXOR       X8, X8, X8; \
	MULACC(Z0, Z1)

// REDUCE512 adds the four lanes of Z4, Z5 and Z6 and reduces them into X8.
#define REDUCE512 \
	VEXTRACTI64X4 $1, Z4, Y7; \
	VPXOR         Y7, Y4, Y4; \
	VEXTRACTI64X4 $1, Z5, Y7; \
	VPXOR         Y7, Y5, Y5; \
	VEXTRACTI64X4 $1, Z6, Y7; \
	VPXOR         Y7, Y6, Y6; \
	REDUCE

// func ghashAVX512(y *[2]uint64, t *ghashTable, p *byte, n int, q *byte, m int)
//
// The reduction that ends a group of blocks feeds the first block of the
// next one: that chain (about 35 cycles) bounds the loop, so a group is
// 32 blocks, twice the 256-bit loop's.
TEXT ·ghashAVX512(SB), NOSPLIT, $0-48
	MOVQ            y+0(FP), DI
	MOVQ            t+8(FP), SI
	MOVQ            p+16(FP), DX
	MOVQ            n+24(FP), CX
	MOVQ            q+32(FP), R8
	MOVQ            m+40(FP), R9
	VMOVDQU         (DI), X8 // the running value; its upper lanes are zero
	VBROADCASTI32X4 bswapMask<>(SB), Z15
	VMOVDQU         polyK<>(SB), X14
	CMPQ            CX, $32
	JB              tail

	// H^32 .. H^1: the table from its second entry.
	VMOVDQU64 16(SI), Z16
	VMOVDQU64 80(SI), Z17
	VMOVDQU64 144(SI), Z18
	VMOVDQU64 208(SI), Z19
	VMOVDQU64 272(SI), Z20
	VMOVDQU64 336(SI), Z21
	VMOVDQU64 400(SI), Z22
	VMOVDQU64 464(SI), Z23

loop32:
	// Blocks 5 to 32 first: they do not wait for the running value.
	LOAD4(64(DX), Z1)
	LOAD4(128(DX), Z2)
	LOAD4(192(DX), Z3)
	LOAD4(256(DX), Z28)
	LOAD4(320(DX), Z29)
	LOAD4(384(DX), Z30)
	LOAD4(448(DX), Z31)
	LOAD4(0(DX), Z0)
	VPCLMULQDQ $0x00, Z17, Z1, Z4
	VPCLMULQDQ $0x11, Z17, Z1, Z5
	VPCLMULQDQ $0x01, Z17, Z1, Z6
	VPCLMULQDQ $0x10, Z17, Z1, Z7
	VPXORQ     Z7, Z6, Z6
	MULACC(Z2, Z18)
	MULACC(Z3, Z19)
	MULACC(Z28, Z20)
	MULACC(Z29, Z21)
	MULACC(Z30, Z22)
	MULACC(Z31, Z23)
	VPXORQ     Z8, Z0, Z0
	MULACC(Z0, Z16)
	REDUCE512
	ADDQ       $512, DX
	SUBQ       $32, CX
	CMPQ       CX, $32
	JAE        loop32

tail:
	// r = CX < 32 blocks of p, then R9 blocks of q: block i of the r+R9
	// takes H^(r+R9-i), table entry 33-(r+R9)+i.
	MOVQ   CX, AX
	ADDQ   R9, AX
	JZ     done
	MOVQ   $33, BX
	SUBQ   AX, BX
	SHLQ   $4, BX
	ADDQ   SI, BX
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	TESTQ  CX, CX
	JZ     last

	// K1: two bits per block of p; four blocks (eight bits) per chunk.
	SHLQ  $1, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVQ AX, K1

chunk:
	MASKED4((DX), (BX))
	ADDQ     $64, DX
	ADDQ     $64, BX
	KSHIFTRQ $8, K1, K1
	KORTESTQ K1, K1
	JNZ      chunk

last:
	// q's R9 blocks (at most two) with the last powers, entry 33-R9 on.
	TESTQ R9, R9
	JZ    reduce
	MOVQ  $33, BX
	SUBQ  R9, BX
	SHLQ  $4, BX
	ADDQ  SI, BX
	MOVQ  R9, CX
	SHLQ  $1, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVD AX, K1
	MASKED4((R8), (BX))

reduce:
	REDUCE512

done:
	VMOVDQU X8, (DI)
	VZEROUPPER
	RET
