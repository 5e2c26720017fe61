package driver

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// allPorts is the set of GM port ids (bit p).
const allPorts = 1<<wire.NumPorts - 1

// Rate limit of the PORT_CLOSED answers: a token bucket.
const (
	nackBurst = 256
	nackRate  = 2000 // per second
)

// nackState is the answers' rate limit, shared by the rails' answerers.
type nackState struct {
	mu     sync.Mutex
	tokens float64
	last   time.Duration
	sent   atomic.Uint64
}

func (n *nackState) init() { n.tokens = nackBurst }

// take reports whether an answer may go out at now.
func (n *nackState) take(now time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tokens = min(n.tokens+float64(now-n.last)*nackRate/float64(time.Second), nackBurst)
	n.last = now
	if n.tokens < 1 {
		return false
	}
	n.tokens--
	return true
}

// portState is what the Driver knows of the unit's open ports (bit p for
// port p). A port is open while it holds a connection to the Driver's
// watch (conn) or, if it holds none, while the last look at the socket
// list found it (listed). A port whose connection ended is gone: closed,
// even while the socket list still shows its name (its process is dying
// and the kernel has not freed the name yet), until it connects again or
// the list no longer shows it.
type portState struct {
	conn, listed, gone uint32
	// byEvent and byPoll count the ports found closed by the end of their
	// connection and by the socket list.
	byEvent, byPoll uint64
}

func (s *portState) open() uint32 { return s.conn | s.listed&^s.gone }

// connected records the ports that hold a connection now and those whose
// connection ended since the last call; it reports whether the open set
// changed.
func (s *portState) connected(conn, ended uint32) bool {
	was := s.open()
	closed := ended &^ conn
	s.byEvent += uint64(bits.OnesCount32(closed & was))
	s.gone = (s.gone | closed) &^ conn
	s.conn = conn
	return s.open() != was
}

// list records a look at the socket list; it reports whether the open set
// changed.
func (s *portState) list(listed uint32) bool {
	was := s.open()
	s.gone &= listed // a gone port no longer listed is closed for good
	s.listed = listed
	s.byPoll += uint64(bits.OnesCount32(was &^ s.open()))
	return s.open() != was
}

// portEvent is the watch's notify: a port connected or its connection
// ended. It runs on a goroutine of the watch and only wakes Run.
func (d *Driver) portEvent() {
	select {
	case d.nudge <- struct{}{}:
	default:
	}
	d.wake()
}

// watchPorts takes the watch's news and, if the open ports changed, puts
// the closed-ports links in step at once.
func (d *Driver) watchPorts(now mapper.Time) {
	if d.watch == nil {
		return
	}
	conn, ended := d.watch.Take()
	before := d.ports.open()
	if !d.ports.connected(conn, ended) {
		return
	}
	after := d.ports.open()
	d.log.Debug("open ports changed", "opened", portList(after&^before), "closed", portList(before&^after), "by", "connection")
	d.syncClosed()
}

// portList formats a port set for the log.
func portList(m uint32) []int {
	var ps []int
	for p := range wire.NumPorts {
		if m&(1<<p) != 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// probePorts looks at the socket list for the unit's open ports and keeps
// each rail's closed-ports link in step.
func (d *Driver) probePorts(now mapper.Time) {
	d.nextPortProbe = now + PortProbeInterval
	var listed uint32
	if d.list != nil {
		m, err := d.list.Ports()
		if err != nil {
			d.log.Warn("listing the open ports", "err", err)
			m = allPorts // nothing is answered on a guess
		}
		listed = m
	} else {
		listed = ownerPorts(d.cfg.Unit)
	}
	d.ports.list(listed)
	d.syncClosed()
}

// syncClosed keeps each rail's closed-ports link in step with the open
// ports: its port mask is every port that is not open (the mapper port
// aside). Without a node id (no map yet) nothing can be answered, so there
// is no such link. It tells the connected ports which ports are gone.
func (d *Driver) syncClosed() {
	if d.watch != nil {
		d.watch.Publish(d.ports.gone)
	}
	d.view.Store(&closedView{self: d.selfID, open: d.ports.open(), gone: d.ports.gone})
	want := link.PortMask(allPorts &^ d.ports.open() &^ (1 << MapperPort))
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
		if r.closed != nil && r.closed.Caps().Has(link.CapPortFilter) {
			if err := r.closed.SetPorts(want); err == nil {
				r.mask = want
				continue
			}
		}
		r.closeClosed()
		cfg := d.linkConfig(want, closedRxBlocks)
		cfg.MaxSleep = closedMaxSleep
		lk, err := d.cfg.OpenLink(r.name, cfg)
		if err != nil {
			d.log.Warn("opening the closed-ports link", "interface", r.name, "rail", i, "err", err)
			continue
		}
		r.closed, r.mask = lk, want
		r.answerer = d.startAnswerer(i, r, lk)
		d.log.Debug("answering for closed ports", "interface", r.name, "ports", fmt.Sprintf("%#04x", uint32(want)))
	}
}

// closedView is what the answerers need of the Driver's state: this
// host's node id and the open and gone ports (portState). Run replaces it
// whenever any of them changes.
type closedView struct {
	self, open, gone uint32
}

// answerer reads a rail's closed-ports link on a goroutine of its own, so
// that a frame for a closed port is answered as soon as it arrives (Run
// reads the mapper links only every RecvDelay), and answers on that link.
type answerer struct {
	d    *Driver
	rail int
	mac  nodemap.MAC
	lk   link.Endpoint
	done chan struct{}

	buf []byte
	hdr wire.HeaderFields
}

func (d *Driver) startAnswerer(i int, r *rail, lk link.Endpoint) *answerer {
	a := &answerer{d: d, rail: i, mac: r.mac, lk: lk, done: make(chan struct{})}
	go a.run()
	return a
}

// run answers until the link is closed (closeClosed).
func (a *answerer) run() {
	defer close(a.done)
	frames := make([][]byte, 16)
	for {
		n, err := a.lk.Wait(frames, -1)
		if errors.Is(err, link.ErrClosed) {
			return
		}
		if err != nil {
			// A transient error: do not spin on it.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for _, f := range frames[:n] {
			a.answer(f)
		}
	}
}

// answer answers a frame received for a closed port with a NACK
// PORT_CLOSED, if it is an OPEN or a reliable frame for this host.
func (a *answerer) answer(frame []byte) {
	d := a.d
	v := d.view.Load()
	h, err := wire.ParseFrame(frame, d.cfg.EtherType)
	if err != nil || v == nil || v.self == 0 || h.TargetNode() != v.self {
		return
	}
	if !answerable(h.Type()) {
		return
	}
	tp := h.TargetPort()
	if tp >= wire.NumPorts || tp == MapperPort || v.open&(1<<tp) != 0 {
		return
	}
	if !d.nack.take(d.now()) {
		return
	}
	// The port may have opened since the Driver last looked (a gone port
	// that opens again connects first): the next look finds it.
	if v.gone&(1<<tp) == 0 {
		if _, err := ctl.Owner(ctl.PortName(d.cfg.Unit, int(tp))); err == nil {
			return
		}
	}
	a.buf = wire.AppendPortClosedNack(a.buf[:0], &a.hdr, frame, h, a.mac, v.self, d.cfg.EtherType)
	if err := a.lk.Send(a.buf); err != nil {
		d.answerErrors.Add(1)
		return
	}
	d.nack.sent.Add(1)
}

// answerable reports whether a frame of type t for a closed port is
// answered: the OPEN that starts a session, and every reliable frame
// (DATA, PUT, GET, GOT). ACK, NACK, OPEN_ACK, DATAGRAM and mapper frames
// are not, as gm's ports do.
func answerable(t wire.Type) bool {
	return t == wire.TypeOpen || t.IsData() || t.HasRemoteAddr()
}

// ownerPorts asks each port's name with ctl.Owner: the open ports when the
// socket list cannot be read.
func ownerPorts(unit string) uint32 {
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
