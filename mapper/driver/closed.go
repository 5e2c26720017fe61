package driver

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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
func (d *Driver) probePorts() {
	d.open = openPorts(d.cfg.Unit, d.cfg.StateDir)
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
// PORT_CLOSED, if it is a reliable frame for this host.
func (d *Driver) answerClosed(now mapper.Time, rail int, frame []byte) {
	h, err := wire.ParseFrame(frame, d.cfg.EtherType)
	if err != nil || d.selfID == 0 || h.TargetNode() != d.selfID {
		return
	}
	t := h.Type()
	if !t.IsData() && !t.HasRemoteAddr() {
		return // ACK, NACK, DATAGRAM, mapper frames: nothing to answer
	}
	tp := h.TargetPort()
	if tp >= wire.NumPorts || tp == MapperPort || d.open&(1<<tp) != 0 {
		return
	}
	if !d.nack.take(now) {
		return
	}
	// The port may have opened since the last probe.
	if portOpen(d.cfg.Unit, d.cfg.StateDir, int(tp)) {
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

// openPorts returns the ports of unit that are open in this network
// namespace (bit p): those whose abstract socket (ctl.PortName) is
// listening, and, if stateDir is set, those whose gm lock file
// (<stateDir>/<unit>.port<p>.lock) is locked.
func openPorts(unit, stateDir string) uint32 {
	return socketPorts(unit) | lockedPorts(unit, stateDir)
}

// socketPorts reads /proc/thread-self/net/unix (the calling thread's
// network namespace; /proc/net is the main thread's) for listening sockets
// named ctl.PortName(unit, p). One read, instead of one connection to each
// port (which would make each port's process answer).
func socketPorts(unit string) uint32 {
	data, err := os.ReadFile("/proc/thread-self/net/unix")
	if err != nil {
		data, err = os.ReadFile("/proc/net/unix")
	}
	if err != nil {
		return fallbackSocketPorts(unit)
	}
	return parseUnixSockets(data, unit)
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

// lockedPorts tests gm's port lock files without taking them
// (F_OFD_GETLK); files that do not exist are closed ports.
func lockedPorts(unit, stateDir string) uint32 {
	if stateDir == "" {
		return 0
	}
	var open uint32
	for p := range wire.NumPorts {
		if lockedPort(unit, stateDir, p) {
			open |= 1 << p
		}
	}
	return open
}

// lockedPort reports whether port p's lock file is locked.
func lockedPort(unit, stateDir string, p int) bool {
	if stateDir == "" {
		return false
	}
	f, err := os.Open(filepath.Join(stateDir, fmt.Sprintf("%s.port%d.lock", unit, p)))
	if err != nil {
		return false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk) == nil && lk.Type != unix.F_UNLCK
}

// portOpen reports whether port p of unit is open now: its socket has an
// owner or its lock file is locked.
func portOpen(unit, stateDir string, p int) bool {
	if _, err := ctl.Owner(ctl.PortName(unit, p)); err == nil {
		return true
	}
	return lockedPort(unit, stateDir, p)
}
