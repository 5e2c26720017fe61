#include "textflag.h"

// func castagnoliTwo(a, b []byte) uint32
//
// The CRC32C of a followed by b (initial value and final complement as
// hash/crc32's), with the SSE4.2 CRC32 instruction: eight bytes per
// instruction, then four, two and one. The loads need no alignment.
TEXT ·castagnoliTwo(SB), NOSPLIT, $0-52
	MOVL $0xffffffff, AX
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	MOVQ b_len+32(FP), DX

part:
	CMPQ CX, $32
	JB   by8

	CRC32Q 0(SI), AX
	CRC32Q 8(SI), AX
	CRC32Q 16(SI), AX
	CRC32Q 24(SI), AX
	ADDQ   $32, SI
	SUBQ   $32, CX
	JMP    part

by8:
	CMPQ CX, $8
	JB   by4
	CRC32Q (SI), AX
	ADDQ   $8, SI
	SUBQ   $8, CX
	JMP    by8

by4:
	TESTQ  $4, CX
	JZ     by2
	CRC32L (SI), AX
	ADDQ   $4, SI

by2:
	TESTQ  $2, CX
	JZ     by1
	CRC32W (SI), AX
	ADDQ   $2, SI

by1:
	TESTQ  $1, CX
	JZ     next
	CRC32B (SI), AX

next:
	// Then b, if it holds anything; DX = 0 marks it done.
	TESTQ DX, DX
	JZ    done
	MOVQ  DI, SI
	MOVQ  DX, CX
	XORQ  DX, DX
	JMP   part

done:
	NOTL AX
	MOVL AX, ret+48(FP)
	RET

// FOLD moves the two chunks of A 1024 bits forward (the constants in Y15)
// and adds the 32 bytes at OFF(SI), through T.
#define FOLD(A, T, OFF) \
	VPCLMULQDQ $0x00, Y15, A, T; \
	VPCLMULQDQ $0x11, Y15, A, A; \
	VPXOR      OFF(SI), T, T; \
	VPXOR      T, A, A

// MOVEINTO moves the two chunks of A forward by the constants at KOFF(DI)
// and adds them to Y0. Clobbers Y4 and Y14.
#define MOVEINTO(A, KOFF) \
	VMOVDQU    KOFF(DI), Y14; \
	VPCLMULQDQ $0x00, Y14, A, Y4; \
	VPCLMULQDQ $0x11, Y14, A, A; \
	VPXOR      Y4, A, A; \
	VPXOR      A, Y0, Y0

// func castagnoliFold(crc uint32, p []byte, k *[9][2]uint64) uint32
//
// CRC32C of p (len(p) >= 128) from crc (hash/crc32's form: complemented).
// The register's value is XORed into the first four bytes, which then
// describe the same remainder from a zero register. Four 256-bit
// accumulators hold eight 16-byte chunks; each step moves them 128 bytes
// forward (two carry-less products per chunk, by the constants of
// foldConsts) and adds the next 128 bytes. The eight chunks are then moved
// onto the last one, whole chunks that remain are folded in one by one,
// and the CRC32 instruction takes the remaining 128 bits from a zero
// register, then the last 0 to 15 bytes.
TEXT ·castagnoliFold(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	NOTL AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DI

	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VMOVD   AX, X4 // upper bits zero
	VPXOR   Y4, Y0, Y0
	ADDQ    $128, SI
	SUBQ    $128, CX
	VMOVDQU 0(DI), Y15 // D = 1024 in both lanes

fold128:
	CMPQ CX, $128
	JB   last8
	FOLD(Y0, Y4, 0)
	FOLD(Y1, Y5, 32)
	FOLD(Y2, Y6, 64)
	FOLD(Y3, Y7, 96)
	ADDQ       $128, SI
	SUBQ       $128, CX
	JMP        fold128

last8:
	// Chunks 0 to 5 (Y0 to Y2) move 896 to 256 bits, chunk 6 (Y3's low
	// lane) 128, chunk 7 stays.
	VMOVDQU    32(DI), Y14
	VPCLMULQDQ $0x00, Y14, Y0, Y4
	VPCLMULQDQ $0x11, Y14, Y0, Y0
	VPXOR      Y4, Y0, Y0
	MOVEINTO(Y1, 64)
	MOVEINTO(Y2, 96)
	VEXTRACTI128 $1, Y0, X1
	VPXOR      X1, X0, X0
	VMOVDQU    128(DI), X14 // D = 128
	VPCLMULQDQ $0x00, X14, X3, X4
	VPCLMULQDQ $0x11, X14, X3, X5
	VPXOR      X5, X4, X4
	VPXOR      X4, X0, X0
	VEXTRACTI128 $1, Y3, X1
	VPXOR      X1, X0, X0

fold16:
	CMPQ CX, $16
	JB   finish
	VPCLMULQDQ $0x00, X14, X0, X4
	VPCLMULQDQ $0x11, X14, X0, X0
	VPXOR      X4, X0, X0
	VPXOR      (SI), X0, X0
	ADDQ       $16, SI
	SUBQ       $16, CX
	JMP        fold16

finish:
	VMOVQ     X0, R8
	VPEXTRQ   $1, X0, R9
	VZEROUPPER
	XORL      AX, AX
	CRC32Q    R8, AX
	CRC32Q    R9, AX

tail8:
	CMPQ CX, $8
	JB   tail4
	CRC32Q (SI), AX
	ADDQ   $8, SI
	SUBQ   $8, CX

tail4:
	TESTQ  $4, CX
	JZ     tail2
	CRC32L (SI), AX
	ADDQ   $4, SI

tail2:
	TESTQ  $2, CX
	JZ     tail1
	CRC32W (SI), AX
	ADDQ   $2, SI

tail1:
	TESTQ  $1, CX
	JZ     fdone
	CRC32B (SI), AX

fdone:
	NOTL AX
	MOVL AX, ret+40(FP)
	RET
