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
