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

// REDUCE adds the two lanes of Y4, Y5 and Y6, forms the 256-bit product
// (X5:X4) and reduces it into X8. Clobbers X4 to X7.
#define REDUCE \
	VEXTRACTI128 $1, Y4, X7; \
	VPXOR        X7, X4, X4; \
	VEXTRACTI128 $1, Y5, X7; \
	VPXOR        X7, X5, X5; \
	VEXTRACTI128 $1, Y6, X7; \
	VPXOR        X7, X6, X6; \
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

// func ghashAVX2(y *[2]uint64, t *ghashTable, p *byte, n int)
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
