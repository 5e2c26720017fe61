package link

import (
	"encoding/binary"
	"math/bits"

	"golang.org/x/net/bpf"

	"github.com/ethergm/ethergm/wire"
)

// Packet types seen by a packet socket (sll_pkttype, skb->pkt_type, the
// value of the classic-BPF pkt_type extension), from <linux/if_packet.h>.
const (
	pktHost      = 0 // to us
	pktBroadcast = 1 // to all
	pktMulticast = 2 // to group
	pktOtherHost = 3 // to someone else (promiscuous)
	pktOutgoing  = 4 // sent by this host (seen only by ETH_P_ALL taps)
)

// targetPortFrameOff is the frame offset of the target port byte.
const targetPortFrameOff = wire.EthHeaderLen + wire.TargetPortOffset

// acceptAll is the snap length returned by an accepting filter: larger than
// any frame (the kernel clamps it to the frame length).
const acceptAll = 0x40000

// filterSpec describes a receive filter.
//
// The Link's sockets are bound to the EtherType on every interface of the
// network namespace (ifindex 0), not to ETH_P_ALL: an ETH_P_ALL socket is
// a tap, and the kernel clones every frame the host sends for the taps.
// The filter therefore selects the interface: frames received on the
// Link's interface (not PACKET_OTHERHOST), and frames received on the
// loopback interface whose destination MAC is the Link's own (the frames
// other Links of this host address to it, which Send routes through lo).
type filterSpec struct {
	etherType uint16
	ports     PortMask // used unless port is set
	port      int      // if >= 0, accept exactly this target port (any value 0..255)
	mac       [6]byte  // our own MAC
	ifindex   int      // the Link's interface (0: do not check the interface)
	loIndex   int      // the loopback interface (0: none)
	// selfTest selects the self-test variant: accept only frames received
	// on the loopback interface whose source MAC is ours.
	selfTest bool
	snap     uint32 // accept return value (snap length)
}

// buildFilter returns the classic BPF program for spec. It has two parts:
//
//   - the header part (EtherType and target port), which bpf.NewVM can run;
//   - the interface part, which uses the ifindex and pkt_type extensions
//     (bpf.NewVM implements neither; tests replace those loads by constant
//     loads, which keeps every jump offset valid).
//
// Normal program (mask with several bits; one bit uses a plain compare):
//
//	ldh [12]        ; EtherType
//	jne #type, drop
//	ldb [16]        ; target port
//	jge #32, drop
//	tax
//	ld #1
//	lsh x           ; A = 1 << port
//	and #mask
//	jeq #0, drop
//	ld ifindex
//	jeq #lo, self   ; (if there is a loopback interface)
//	jne #ifindex, drop
//	ld pkt_type
//	jeq #OTHERHOST, drop
//	jne #OUTGOING, accept
//	self: ld [0]    ; destination MAC bytes 0..3
//	jne #mac0_3, drop
//	ldh [4]         ; destination MAC bytes 4..5
//	jne #mac4_5, drop
//	accept: ret #snap
//	drop:   ret #0
//
// The self-test program has "ld ifindex; jne #lo, drop" as its interface
// part and checks the source MAC (offset 6) instead.
func buildFilter(spec filterSpec) []bpf.Instruction {
	// Instructions are built front to back with symbolic targets, then the
	// skip counts are fixed up once the positions of accept/drop are known.
	const (
		toDrop = iota + 1
		toAccept
		toSelf // the MAC check
	)
	type jump struct {
		ins         bpf.JumpIf
		trueTarget  int // 0 = next instruction, else toDrop/toAccept
		falseTarget int
	}
	var prog []any // bpf.Instruction or jump
	add := func(i bpf.Instruction) { prog = append(prog, i) }
	jmp := func(cond bpf.JumpTest, val uint32, t, f int) {
		prog = append(prog, jump{ins: bpf.JumpIf{Cond: cond, Val: val}, trueTarget: t, falseTarget: f})
	}

	add(bpf.LoadAbsolute{Off: 12, Size: 2})
	jmp(bpf.JumpNotEqual, uint32(spec.etherType), toDrop, 0)
	add(bpf.LoadAbsolute{Off: targetPortFrameOff, Size: 1})
	switch {
	case spec.port >= 0:
		jmp(bpf.JumpNotEqual, uint32(spec.port), toDrop, 0)
	case bits.OnesCount32(uint32(spec.ports)) == 1:
		jmp(bpf.JumpNotEqual, uint32(bits.TrailingZeros32(uint32(spec.ports))), toDrop, 0)
	default:
		jmp(bpf.JumpGreaterOrEqual, 32, toDrop, 0)
		if spec.ports != AllPorts {
			add(bpf.TAX{})
			add(bpf.LoadConstant{Dst: bpf.RegA, Val: 1})
			add(bpf.ALUOpX{Op: bpf.ALUOpShiftLeft})
			add(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: uint32(spec.ports)})
			jmp(bpf.JumpEqual, 0, toDrop, 0)
		}
	}
	macOff := uint32(0)
	if spec.selfTest {
		add(bpf.LoadExtension{Num: bpf.ExtInterfaceIndex})
		jmp(bpf.JumpNotEqual, uint32(spec.loIndex), toDrop, 0)
		macOff = 6
	} else {
		if spec.ifindex != 0 {
			add(bpf.LoadExtension{Num: bpf.ExtInterfaceIndex})
			if spec.loIndex != 0 && spec.loIndex != spec.ifindex {
				jmp(bpf.JumpEqual, uint32(spec.loIndex), toSelf, 0)
			}
			jmp(bpf.JumpNotEqual, uint32(spec.ifindex), toDrop, 0)
		}
		add(bpf.LoadExtension{Num: bpf.ExtType})
		jmp(bpf.JumpEqual, pktOtherHost, toDrop, 0)
		jmp(bpf.JumpNotEqual, pktOutgoing, toAccept, 0)
	}
	self := len(prog)
	add(bpf.LoadAbsolute{Off: macOff, Size: 4})
	jmp(bpf.JumpNotEqual, binary.BigEndian.Uint32(spec.mac[0:4]), toDrop, 0)
	add(bpf.LoadAbsolute{Off: macOff + 4, Size: 2})
	jmp(bpf.JumpNotEqual, uint32(binary.BigEndian.Uint16(spec.mac[4:6])), toDrop, 0)

	accept := len(prog)
	drop := accept + 1
	out := make([]bpf.Instruction, 0, len(prog)+2)
	for pc, p := range prog {
		j, ok := p.(jump)
		if !ok {
			out = append(out, p.(bpf.Instruction))
			continue
		}
		skip := func(target int) uint8 {
			switch target {
			case toDrop:
				return uint8(drop - pc - 1)
			case toAccept:
				return uint8(accept - pc - 1)
			case toSelf:
				return uint8(self - pc - 1)
			}
			return 0
		}
		j.ins.SkipTrue = skip(j.trueTarget)
		j.ins.SkipFalse = skip(j.falseTarget)
		out = append(out, j.ins)
	}
	out = append(out, bpf.RetConstant{Val: spec.snap}, bpf.RetConstant{Val: 0})
	return out
}
