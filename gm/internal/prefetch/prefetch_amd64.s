#include "textflag.h"

// func lines(p unsafe.Pointer, n int) int
TEXT ·lines(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ	p+0(FP), AX
	MOVQ	n+8(FP), CX
	LEAQ	(AX)(CX*1), CX	// end
	ANDQ	$~63, AX	// the line holding p[0]
	XORQ	DX, DX
loop:
	PREFETCHT0	(AX)
	INCQ	DX
	ADDQ	$64, AX
	CMPQ	AX, CX
	JB	loop
	MOVQ	DX, ret+16(FP)
	RET
