package gm

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethergm/ethergm/gm/internal/proto"
)

// ErrDatagramNotSent means the link did not take a datagram's frame (its
// transmit ring was full, or the link is down): nothing was sent, no send
// token is taken; send it again later. It wraps TryAgain.
var ErrDatagramNotSent = proto.ErrDatagramNotSent

// DatagramMax returns the longest datagram this port sends: one frame's
// payload at its link's MTU (1448 bytes at MTU 1500).
func (p *Port) DatagramMax() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.DatagramMax()
}

// DatagramSend is gm_datagram_send: it sends msg[:length] as one
// unreliable frame, a message of size class size and priority pri to port
// port of node node. It takes a send token; cb (which may be nil) runs
// inside Unknown with Success as soon as the frame was handed to the
// link, and msg may be reused once DatagramSend returns. The datagram is
// never acknowledged or sent again: it arrives at most once, as an
// ordinary receive event (RecvEvent, HighRecvEvent, or their PEER forms,
// never FAST) if the target provided a buffer of its size and priority
// and accepts that size, and is otherwise dropped (counted in
// Stats.DatagramsNoBuffer). Datagrams may overtake, or be overtaken by,
// the messages of the same stream, and each other.
//
// Datagrams pass every check other frames of a peer pass (node map, source
// MAC, cluster key), and a receiver delivers no datagram twice, also when
// its frame is duplicated or replayed (docs/PROTOCOL.md, section 7.7).
//
// Misuse returns an error and sends nothing: ErrLength (length < 0,
// beyond len(msg), MaxLengthForSize(size) or DatagramMax), ErrSize,
// ErrPriority, ErrPortID, ErrUnknownNode, ErrNoSendToken, ErrClosed,
// NodeIDNotYetSet, and ErrDatagramNotSent (with TryAgain) when the link
// did not take the frame.
func (p *Port) DatagramSend(msg []byte, size uint8, length int, pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	err := p.submit(port, cb, func(now time.Duration, cbv any) error {
		return p.eng.Datagram(now, msg, size, length, uint8(pri), uint32(node), uint8(port), cbv, ctx)
	})
	if errors.Is(err, proto.ErrDatagramNotSent) {
		return fmt.Errorf("%w: %w", TryAgain, err)
	}
	return err
}
