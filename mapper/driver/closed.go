package driver

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// soAcceptCon is __SO_ACCEPTCON (linux/net.h), the Flags bit of a
// listening socket in /proc/net/unix.
const soAcceptCon = 0x10000

// allPorts is the set of GM port ids (bit p).
const allPorts = 1<<wire.NumPorts - 1

// Rate limit of the PORT_CLOSED answers: a token bucket.
const (
	nackBurst = 256
	nackRate  = 2000 // per second
)

type nackState struct {
	tokens float64
	last   time.Duration
	sent   uint64
	buf    []byte
	hdr    wire.HeaderFields
}

func (n *nackState) init() { n.tokens = nackBurst }

// take reports whether an answer may go out at now.
func (n *nackState) take(now time.Duration) bool {
	n.tokens = min(n.tokens+float64(now-n.last)*nackRate/float64(time.Second), nackBurst)
	n.last = now
	if n.tokens < 1 {
		return false
	}
	n.tokens--
	return true
}

// probePorts finds the unit's open ports and keeps each rail's
// closed-ports link in step: its port mask is every port that is not open
// (the mapper port aside). Without a node id (no map yet) nothing can be
// answered, so there is no such link.
func (d *Driver) probePorts(now mapper.Time) {
	d.open = d.sockets.ports(d.cfg.Unit)
	d.nextPortProbe = now + PortProbeInterval
	want := link.PortMask(allPorts &^ d.open &^ (1 << MapperPort))
	if d.selfID == 0 {
		want = 0
	}
	for i, r := range d.rails {
		if r.lk == nil || !r.up || want == 0 {
			r.closeClosed()
			continue
		}
		if r.closed != nil && r.mask == want {
			continue
		}
		r.closeClosed()
		lk, err := link.Open(r.name, d.linkConfig(want, closedRxBlocks))
		if err != nil {
			d.log.Warn("opening the closed-ports link", "interface", r.name, "rail", i, "err", err)
			continue
		}
		r.closed, r.mask = lk, want
		d.log.Debug("answering for closed ports", "interface", r.name, "ports", fmt.Sprintf("%#04x", uint32(want)))
	}
}

// answerClosed answers a frame received for a closed port with a NACK
// PORT_CLOSED, if it is an OPEN or a reliable frame for this host.
func (d *Driver) answerClosed(now mapper.Time, rail int, frame []byte) {
	h, err := wire.ParseFrame(frame, d.cfg.EtherType)
	if err != nil || d.selfID == 0 || h.TargetNode() != d.selfID {
		return
	}
	if !answerable(h.Type()) {
		return
	}
	tp := h.TargetPort()
	if tp >= wire.NumPorts || tp == MapperPort || d.open&(1<<tp) != 0 {
		return
	}
	if !d.nack.take(now) {
		return
	}
	// The port may have opened since the last probe.
	if _, err := ctl.Owner(ctl.PortName(d.cfg.Unit, int(tp))); err == nil {
		d.open |= 1 << tp
		return
	}
	r := d.rails[rail]
	if r.lk == nil {
		return
	}
	d.nack.buf = appendClosedNack(d.nack.buf[:0], &d.nack.hdr, frame, h, r.mac, d.selfID, d.cfg.EtherType)
	if err := r.lk.Send(d.nack.buf); err != nil {
		d.sendErrors++
		return
	}
	d.nack.sent++
}

// answerable reports whether a frame of type t for a closed port is
// answered: the OPEN that starts a session, and every reliable frame
// (DATA, PUT, GET, GOT). ACK, NACK, OPEN_ACK, DATAGRAM and mapper frames
// are not, as gm's ports do.
func answerable(t wire.Type) bool {
	return t == wire.TypeOpen || t.IsData() || t.HasRemoteAddr()
}

// appendClosedNack appends to b the NACK PORT_CLOSED that answers frame
// (parsed as h), sent from mac by node self. It echoes what the sender's
// stream matches the nack with: the frame's session and sequence number,
// its priority flag, and the ports swapped (the nack comes from the closed
// port to the sending port).
func appendClosedNack(b []byte, hdr *wire.HeaderFields, frame []byte, h wire.Header, mac nodemap.MAC, self uint32, etherType uint16) []byte {
	*hdr = wire.HeaderFields{
		Type: wire.TypeNack, TargetPort: h.SourcePort(), SourcePort: h.TargetPort(),
		Flags: h.Flags() & wire.FlagHigh, Status: uint8(wire.NackPortClosed),
		TargetNode: h.SourceNode(), SourceNode: self,
		Session: h.Session(), Seq: h.Seq(),
	}
	return wire.AppendFrame(b, wire.Ethernet(frame).Src(), mac, etherType, hdr, nil)
}

// socketList reads the network namespace's socket list to find the open
// ports (their abstract sockets, ctl.PortName). One read, instead of one
// connection to each port (which would make each port's process answer).
// The file is /proc/thread-self/net/unix opened by the thread that runs
// New, so later reads from any thread list that thread's namespace
// (/proc/net is the main thread's).
type socketList struct {
	f   *os.File
	buf []byte
}

func (s *socketList) open() {
	f, err := os.Open("/proc/thread-self/net/unix")
	if err == nil {
		s.f = f
	}
}

func (s *socketList) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// ports returns the ports of unit whose sockets are listening.
func (s *socketList) ports(unit string) uint32 {
	if s.f == nil {
		return fallbackSocketPorts(unit)
	}
	if s.buf == nil {
		s.buf = make([]byte, 64<<10)
	}
	n := 0
	for {
		k, err := s.f.ReadAt(s.buf[n:], int64(n))
		n += k
		if err != nil || k == 0 {
			break
		}
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
	}
	return parseUnixSockets(s.buf[:n], unit)
}

// parseUnixSockets returns the ports of unit that /proc/net/unix content
// data lists as listening abstract sockets.
func parseUnixSockets(data []byte, unit string) uint32 {
	prefix := "@" + strings.TrimSuffix(ctl.PortName(unit, 0), "0")
	var open uint32
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Num RefCount Protocol Flags Type St Inode Path
		if len(f) < 8 || !strings.HasPrefix(f[7], prefix) {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&soAcceptCon == 0 {
			continue // not listening
		}
		p, err := strconv.Atoi(f[7][len(prefix):])
		if err != nil || p < 0 || p >= wire.NumPorts {
			continue
		}
		open |= 1 << p
	}
	return open
}

// fallbackSocketPorts asks each port's name with ctl.Owner.
func fallbackSocketPorts(unit string) uint32 {
	var open uint32
	for p := range wire.NumPorts {
		if p == MapperPort {
			continue
		}
		if _, err := ctl.Owner(ctl.PortName(unit, p)); err == nil {
			open |= 1 << p
		}
	}
	return open
}
