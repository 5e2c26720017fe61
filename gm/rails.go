package gm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/gm/internal/proto"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/wire"
)

// Multi-rail units.
//
// A unit with several interfaces (Unit.Interfaces, one per rail) opens one
// link per interface. With one interface the port uses that link directly
// (the engine sends through it, Receive reads it): nothing here runs. With
// several, a railSet stands between the engine and the links:
//
// Pairing. The rail number of an interface is the position of its MAC
// address in this host's node map entry (its index in Unit.Interfaces if
// the map does not list it). The rail numbered n of this host reaches rail
// n of a peer: frames sent on it carry the peer's n-th MAC address. A peer
// with fewer rails is reached on the rails it has; one that has none of
// this unit's rail numbers is reached through the unit's first interface
// and the peer's first MAC (best effort, as with one rail).
//
// Striping. Every reliable stream (this port, priority -> node, port) has
// a home rail (a hash of the stream over the rails that work). The frames
// of a message go out in chunks of railChunkFrames frames: chunk k of every
// message on the k-th working rail after the home rail. So every message
// starts on the home rail, in order with the starts of the stream's other
// messages, and a message of up to railChunkFrames frames (every small
// message) travels on one rail, in order. A large message is spread over
// all rails: bandwidth aggregation. Retransmissions, datagrams and tier-2
// frames go on the home rail. Acks and nacks go, in turn, on the rails on
// which the peer sent frames since this port last sent it something
// (answers follow the peer's use of the rails; see "Failover").
//
// Why chunks of a message and not frames or messages. The receiver
// reassembles a message from frames in any order once it has seen the
// stream's segment length, but it drops a frame of a message that starts
// beyond the next expected message (and asks for a go-back), and the
// sender counts a frame as lost once frames sent 3 transmissions after it
// are acknowledged. Striping single frames, or whole messages, across
// rails lets frames of a later message (or chunk) overtake earlier ones by
// as little as one frame; with chunks inside messages, only a skew of more
// than railChunkFrames frames between rails can reorder message starts.
// Two more things keep the order: the sender starts each run of frames for
// one rail (one system call) before the next run of the batch, so the rails
// carry the frames in send order; and the receiver merges the rails' rings
// back into stream order (see drain), so that reading one ring before the
// other reorders nothing. On veth, striping then causes no retransmission
// (TestIntegrationRails checks it; without these two, 0.4-1.7% of the
// frames were resent needlessly).
//
// Failover. A rail is down for every peer when its interface is down or
// has no carrier (Link.Running, checked every railCarrierEvery) or a send
// on it fails with ENETDOWN (detected at once: the frame goes out on
// another rail). A rail is suspect for one peer when reliable frames sent
// to that peer on it are not answered on it while the peer's answers
// arrive on other rails (railEvidenceAcks acks or nacks, each at least
// railEvidenceWait after the first unanswered frame), or when the peer
// answers nothing on it for railSilence while this port keeps sending on
// it. Down and suspect rails carry no traffic to the peer; the frames lost
// on them are retransmitted by the protocol engine on the working rails,
// so the application sees no error. A rail comes back as soon as a frame
// arrives on it (any frame from the peer clears the suspicion), its
// carrier returns, or a probe answers: every railProbeEvery, a copy of a
// recent frame to the peer (a duplicate the peer acknowledges) is sent on
// each of its suspect rails.

// maxRails is the largest number of interfaces a unit may have.
const maxRails = 8

// Tuning of the rail logic (see the comment above).
const (
	railChunkFrames  = 32
	railEvidenceWait = 10 * time.Millisecond
	railEvidenceAcks = 3
	railSilence      = 50 * time.Millisecond
	railProbeEvery   = 50 * time.Millisecond
	railCarrierEvery = 20 * time.Millisecond
	railMaintEvery   = 2 * time.Millisecond
	// railPumpEvery is how many frames drain feeds the engine between two
	// Pump calls while the rings hold more (as drainLocked does after each
	// full batch).
	railPumpEvery = 64
	// railRecheck is how many frames drain passes on between two looks at
	// the rings it found empty.
	railRecheck = 8
	// railLook is how far pick looks into another ring for an earlier
	// frame of a stream (past frames of other streams).
	railLook = 32
)

// railLink is what a railSet needs of a link (a subset of link.Endpoint;
// fakes in tests).
type railLink interface {
	Send(frame []byte) error
	SendBatch(frames [][]byte) (int, error)
	TxSlot() []byte
	TxCommit(n int) error
	Flush() error
	Recv(frames [][]byte) int
	Running() bool
	Stats() link.Stats
	Name() string
	Close() error
}

// railEngine is what a railSet feeds received frames to (proto.Engine).
type railEngine interface {
	Input(now proto.Time, frame []byte)
	Pump(now proto.Time)
}

// railWait sleeps on every rail until a frame arrives on one (consuming
// none), a Wake, a Close or timeout.
type railWait func(timeout time.Duration) error

// newRailWait returns the railWait of eps: link.MultiWait for AF_PACKET
// links, the endpoints' own WaitAny if they have one (linktest), else a
// short sleep (the port then polls every railPollSleep while it waits).
func newRailWait(eps []link.Endpoint) railWait {
	lks := make([]*link.Link, 0, len(eps))
	for _, e := range eps {
		if l, ok := e.(*link.Link); ok {
			lks = append(lks, l)
		}
	}
	if len(lks) == len(eps) {
		mw := link.NewMultiWait(lks...)
		return func(timeout time.Duration) error {
			_, _, err := mw.Wait(nil, timeout)
			return err
		}
	}
	if w, ok := eps[0].(interface {
		WaitAny(eps []link.Endpoint, timeout time.Duration) error
	}); ok {
		return func(timeout time.Duration) error { return w.WaitAny(eps, timeout) }
	}
	return func(timeout time.Duration) error {
		time.Sleep(min(timeout, railPollSleep))
		return nil
	}
}

// railPollSleep is how long a multi-rail port sleeps between looks at its
// rails when they cannot sleep together (see newRailWait).
const railPollSleep = 100 * time.Microsecond

// railSet is the rails of a multi-rail port: the engine's proto.Out (and
// proto.SlotOut) and the port's multi-ring reader. It is guarded by the
// port mutex (all calls come from under it).
type railSet struct {
	links []railLink
	wait  railWait // sleeps on every link (nil in unit tests)
	n     int
	macs  [][6]byte // this host's MAC on each rail
	num   []int     // rail number of each link (see "Pairing")
	mtu   int       // the smallest MTU of the rails
	chunk uint32    // bytes of payload per stripe chunk

	eng     railEngine
	clock   func() time.Duration // the port's clock (proto.Time)
	nodeMap func() *NodeMap
	self    func() NodeID

	mapSeen *NodeMap
	peers   map[uint32]*railPeer
	last    *railPeer

	down        uint8 // rails whose interface is down
	lastMaint   time.Duration
	lastCarrier time.Duration

	// Receive merge: the current batch of each ring.
	fr       [][][]byte
	b        [][][]byte
	pos      []int
	full     []bool
	pickNext int // ring pick looks at first

	// Transmit.
	pps      []*railPeer
	slotRail int    // rail of the next TxSlot (the last frame's)
	slotLink int    // rail whose slot the engine holds
	slotBuf  []byte // that slot
	queued   uint8  // rails with committed frames not yet flushed

	st railCounters
}

// railCounters count rail events (DebugState, tests).
type railCounters struct {
	downs, suspicions, revivals, probes, moved uint64
}

// railPeer is the rail state of one peer node.
type railPeer struct {
	node       uint32
	mac        [maxRails][6]byte // the peer's MAC on each of our rails
	has        uint8             // rails on which the peer can be reached
	suspect    uint8             // rails the peer does not answer on
	ackNext    int               // rail of the last answer (round robin)
	unanswered [maxRails]uint32  // frames from the peer per rail since we last sent on it
	txSince    [maxRails]uint32  // reliable frames sent per rail since the peer was last heard on it
	txFirst    [maxRails]time.Duration
	lastTx     [maxRails]time.Duration // when maintain last saw frames sent on the rail
	txActive   uint8                   // rails with frames sent since the last maintain
	evidence   [maxRails]uint8         // answers on other rails while this one is unanswered
	probe      []byte                  // a recent frame to the peer, for probing suspect rails
	probeReady bool
	probeNext  int
	lastProbe  time.Duration
}

// newRailSet builds the rail logic over links (at least two) with this
// host's MACs macs and the smallest link MTU mtu.
func newRailSet(links []railLink, macs [][6]byte, mtu int, clock func() time.Duration, nodeMap func() *NodeMap, self func() NodeID) *railSet {
	n := len(links)
	rs := &railSet{
		links: links, n: n, macs: macs, num: make([]int, n), mtu: mtu,
		chunk: uint32(railChunkFrames * (mtu - wire.HeaderLen)),
		clock: clock, nodeMap: nodeMap, self: self,
		peers: map[uint32]*railPeer{},
		fr:    make([][][]byte, n), b: make([][][]byte, n), pos: make([]int, n), full: make([]bool, n),
	}
	for i := range links {
		rs.num[i] = i
		rs.fr[i] = make([][]byte, 64)
		if !links[i].Running() {
			rs.down |= 1 << i
		}
	}
	return rs
}

// ---- opening and the port's view ----

// openRails opens the links of unit u with open: the first one, and a
// railSet over all of them if the unit has several interfaces (nil
// otherwise).
func openRails(u *Unit, lc *link.Config, open func(string, *link.Config) (link.Endpoint, error)) (link.Endpoint, *railSet, error) {
	if len(u.Interfaces) > maxRails {
		return nil, nil, fmt.Errorf("unit %q has %d interfaces (at most %d rails)", u.Name, len(u.Interfaces), maxRails)
	}
	for i, a := range u.Interfaces {
		for _, b := range u.Interfaces[:i] {
			if a == b {
				return nil, nil, fmt.Errorf("unit %q lists interface %s twice", u.Name, a)
			}
		}
	}
	lks := make([]link.Endpoint, 0, len(u.Interfaces))
	for _, ifname := range u.Interfaces {
		lk, err := open(ifname, lc)
		if err == nil && (len(lk.HardwareAddr()) != 6 || lk.MTU() < link.MinMTU) {
			// Only an OpenLink other than link.Open (which checks both)
			// gets here.
			lk.Close()
			err = &link.OpError{Op: "open", Interface: ifname, Err: link.ErrNotEthernet}
			if len(lk.HardwareAddr()) == 6 {
				err = &link.OpError{Op: "open", Interface: ifname, Err: link.ErrMTU, Detail: fmt.Sprint(lk.MTU())}
			}
		}
		if err != nil {
			for _, l := range lks {
				l.Close()
			}
			return nil, nil, err
		}
		lks = append(lks, lk)
	}
	if len(lks) == 1 {
		return lks[0], nil, nil
	}
	links := make([]railLink, len(lks))
	macs := make([][6]byte, len(lks))
	mtu := lks[0].MTU()
	for i, l := range lks {
		links[i] = l
		macs[i] = [6]byte(l.HardwareAddr())
		mtu = min(mtu, l.MTU())
	}
	rs := newRailSet(links, macs, mtu, nil, nil, nil)
	rs.wait = newRailWait(lks)
	return lks[0], rs, nil
}

// attachRails connects the rails to the port once its engine exists.
func (p *Port) attachRails() {
	if rs := p.rails; rs != nil {
		rs.eng = p.eng
		rs.clock = p.now
		rs.nodeMap = p.nodeMap.Load
		rs.self = p.NodeID
	}
}

// engineOut is what the engine sends through: the link, or the rails.
func (p *Port) engineOut() proto.Out {
	if p.rails != nil {
		return p.rails
	}
	return p.lk
}

// linkMTU is the MTU frames are cut to: the link's, or the smallest of the
// rails'.
func (p *Port) linkMTU() int {
	if p.rails != nil {
		return p.rails.mtu
	}
	return p.lk.MTU()
}

// closeLinks closes every link of the port.
func (p *Port) closeLinks() error {
	if p.rails == nil {
		return p.lk.Close()
	}
	var err error
	for _, l := range p.rails.links {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// drainRailsLocked is drainLocked for several rails.
func (p *Port) drainRailsLocked(now time.Duration) int {
	got, all := p.rails.drain(now)
	if !all {
		return got
	}
	p.settleLocked(now, got)
	return got
}

// waitLink sleeps in the kernel until a frame arrives on any rail, a Wake,
// or timeout. With several rails it reads nothing (the next drainLocked
// reads every ring, in stream order) and returns 0.
func (p *Port) waitLink(timeout time.Duration) (int, error) {
	if p.rails == nil {
		return p.lk.Wait(p.frames, timeout)
	}
	return 0, p.rails.wait(timeout)
}

// linkStats is LinkStats: the link's counters, or the sum of the rails'
// (Mode lists the rails' modes if they differ).
func (p *Port) linkStats() link.Stats {
	if p.rails == nil {
		return p.lk.Stats()
	}
	var s link.Stats
	modes := make([]string, len(p.rails.links))
	same := true
	for i, l := range p.rails.links {
		ls := l.Stats()
		s.RxFrames += ls.RxFrames
		s.RxBytes += ls.RxBytes
		s.TxFrames += ls.TxFrames
		s.TxBytes += ls.TxBytes
		s.KernelDrops += ls.KernelDrops
		s.QueueFreezes += ls.QueueFreezes
		s.CRCErrors += ls.CRCErrors
		s.Malformed += ls.Malformed
		modes[i] = ls.Mode
		same = same && ls.Mode == modes[0]
	}
	s.Mode = modes[0]
	if !same {
		s.Mode = strings.Join(modes, " / ")
	}
	return s
}

// RailStats describes one rail (interface) of a port's unit.
type RailStats struct {
	// Interface is the interface name.
	Interface string
	// Down reports that the interface was found down (no carrier, or a
	// send failed with ENETDOWN); the rail carries no traffic until its
	// carrier returns.
	Down bool
	// SuspectPeers is the number of peers that do not answer on this rail
	// (it carries no traffic to them until they do).
	SuspectPeers int
	// Link are the counters of the rail's link.
	Link link.Stats
}

// RailStats returns the state and counters of each rail of the port, in
// the order of Unit.Interfaces. A unit with one interface has one rail,
// never down or suspect (its link is used whatever its state).
func (p *Port) RailStats() []RailStats {
	if p.rails == nil {
		return []RailStats{{Interface: p.lk.Name(), Link: p.lk.Stats()}}
	}
	rs := p.rails
	out := make([]RailStats, rs.n)
	for i, l := range rs.links {
		out[i] = RailStats{Interface: l.Name(), Link: l.Stats()}
	}
	p.mu.Lock()
	for i := range out {
		out[i].Down = rs.down&(1<<i) != 0
		for _, pp := range rs.peers {
			if pp.suspect&(1<<i) != 0 {
				out[i].SuspectPeers++
			}
		}
	}
	p.mu.Unlock()
	return out
}

// railsDebug describes the rail state for DebugState ("" with one rail).
// The port mutex is held.
func (p *Port) railsDebug() string {
	rs := p.rails
	if rs == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  rails:")
	for i, l := range rs.links {
		st := "up"
		if rs.down&(1<<i) != 0 {
			st = "down"
		}
		ls := l.Stats()
		fmt.Fprintf(&b, " %s(#%d %s tx %d rx %d)", l.Name(), rs.num[i], st, ls.TxFrames, ls.RxFrames)
	}
	fmt.Fprintf(&b, " downs %d suspicions %d revivals %d probes %d moved %d\n",
		rs.st.downs, rs.st.suspicions, rs.st.revivals, rs.st.probes, rs.st.moved)
	for _, pp := range rs.peers {
		fmt.Fprintf(&b, "    peer %d: rails %0*b suspect %0*b unanswered %v txSince %v\n",
			pp.node, rs.n, pp.has, rs.n, pp.suspect, pp.unanswered[:rs.n], pp.txSince[:rs.n])
	}
	return b.String()
}

// peerMAC is the MAC frames for the node of e go to with one rail: the
// route's peer MAC in a map made by a mapper (none if this interface has no
// route to the node), else the peer's MAC of this port's rail number, else
// its first one.
func (p *Port) peerMAC(e MapEntry) ([6]byte, bool) {
	if len(e.MACs) == 0 {
		return [6]byte{}, false
	}
	m := p.nodeMap.Load()
	if m.Routed() {
		return m.PeerMAC(p.NodeID(), e.ID, p.mac)
	}
	if own, ok := m.ByID(p.NodeID()); ok {
		for i, mac := range own.MACs {
			if mac == p.mac && i < len(e.MACs) {
				return e.MACs[i], true
			}
		}
	}
	return e.MACs[0], true
}

// ---- peers and the node map ----

// peer returns the rail state of node, or nil if the node map does not
// know it.
func (rs *railSet) peer(node uint32) *railPeer {
	if m := rs.nodeMap(); m != rs.mapSeen {
		rs.remap(m)
	}
	if pp := rs.last; pp != nil && pp.node == node {
		return pp
	}
	pp := rs.peers[node]
	if pp == nil {
		e, ok := rs.mapSeen.ByID(NodeID(node))
		if !ok {
			return nil
		}
		pp = &railPeer{node: node}
		rs.setMACs(pp, e, rs.mapSeen)
		rs.peers[node] = pp
	}
	if pp.has == 0 {
		return nil // the map has no route to the node
	}
	rs.last = pp
	return pp
}

// remap adopts a new node map: rail numbers and peers' MACs.
func (rs *railSet) remap(m *NodeMap) {
	rs.mapSeen, rs.last = m, nil
	own, _ := m.ByID(rs.self())
	for i := range rs.num {
		rs.num[i] = i
		for j, mac := range own.MACs {
			if mac == rs.macs[i] {
				rs.num[i] = j
			}
		}
	}
	for node, pp := range rs.peers {
		e, ok := m.ByID(NodeID(node))
		if !ok {
			delete(rs.peers, node)
			continue
		}
		rs.setMACs(pp, e, m)
	}
}

func (rs *railSet) setMACs(pp *railPeer, e MapEntry, m *NodeMap) {
	pp.has = 0
	if m.Routed() {
		// A map made by a mapper says which of the peer's MACs each of
		// our interfaces reaches; a rail without a route to the peer does
		// not carry its traffic.
		for i, local := range rs.macs {
			if mac, ok := m.PeerMAC(rs.self(), e.ID, local); ok {
				pp.mac[i] = mac
				pp.has |= 1 << i
			}
		}
		pp.suspect &= pp.has
		return
	}
	for i, n := range rs.num {
		if n < len(e.MACs) {
			pp.mac[i] = e.MACs[n]
			pp.has |= 1 << i
		}
	}
	if pp.has == 0 && len(e.MACs) > 0 {
		pp.mac[0], pp.has = e.MACs[0], 1
	}
	pp.suspect &= pp.has
}

// usable returns the rails to use for pp: reachable, not down, not
// suspect; failing that, reachable and not down; failing that, reachable.
func (rs *railSet) usable(pp *railPeer) uint8 {
	if u := pp.has &^ rs.down &^ pp.suspect; u != 0 {
		return u
	}
	if u := pp.has &^ rs.down; u != 0 {
		return u
	}
	return pp.has
}

// nth returns the rail of set bit k mod popcount(mask) of mask (nonzero).
func nth(mask uint8, k uint32) int {
	j := int(k % uint32(bits.OnesCount8(mask)))
	for {
		r := bits.TrailingZeros8(mask)
		if j == 0 {
			return r
		}
		mask &^= 1 << r
		j--
	}
}

// isRequest reports whether frames of type t expect an answer (ack).
func isRequest(t wire.Type) bool {
	switch t {
	case wire.TypeData, wire.TypeDataFirst, wire.TypeDataMiddle, wire.TypeDataLast, wire.TypePut, wire.TypeGet, wire.TypeGot:
		return true
	}
	return false
}

// ---- transmit ----

// route chooses the rail for frame f and returns it with the state of the
// frame's target node (nil if unknown: rail 0).
func (rs *railSet) route(f []byte) (int, *railPeer) {
	if len(f) < wire.EthHeaderLen+wire.HeaderLen {
		return 0, nil
	}
	h := f[wire.EthHeaderLen:]
	node := binary.BigEndian.Uint32(h[wire.OffTargetNode:])
	pp := rs.peer(node)
	if pp == nil {
		return 0, nil
	}
	use := rs.usable(pp)
	fl := wire.Flags(binary.BigEndian.Uint16(h[wire.OffFlags:]))
	key := node*0x9E3779B1 + uint32(h[wire.OffTargetPort])*31 + uint32(h[wire.OffSourcePort])*7
	if fl&wire.FlagHigh != 0 {
		key++
	}
	switch wire.Type(h[wire.OffType]) {
	case wire.TypeAck, wire.TypeNack:
		for k := 1; k <= rs.n; k++ {
			r := (pp.ackNext + k) % rs.n
			if use&(1<<r) != 0 && pp.unanswered[r] > 0 {
				pp.ackNext = r
				return r, pp
			}
		}
	case wire.TypeDataMiddle, wire.TypeDataLast:
		if fl&wire.FlagRetransmit == 0 {
			return nth(use, key+binary.BigEndian.Uint32(h[wire.OffOffset:])/rs.chunk), pp
		}
	}
	return nth(use, key), pp
}

// rewrite sets the Ethernet addresses of f for rail r (the EtherGM CRC
// does not cover them).
func (rs *railSet) rewrite(f []byte, r int, pp *railPeer) {
	if pp != nil {
		copy(f[0:6], pp.mac[r][:])
	}
	copy(f[6:12], rs.macs[r][:])
}

// sent records that f went to pp on rail r.
func (rs *railSet) sent(pp *railPeer, r int, f []byte) {
	if pp == nil {
		return
	}
	pp.unanswered[r] = 0
	t := wire.Type(f[wire.EthHeaderLen+wire.OffType])
	if isRequest(t) {
		if pp.txSince[r] == 0 {
			pp.txFirst[r], pp.evidence[r] = rs.clock(), 0
		}
		pp.txSince[r]++
		pp.txActive |= 1 << r
	}
	if pp.suspect&^rs.down != 0 && !pp.probeReady && (isRequest(t) ||
		t == wire.TypeAck && wire.Flags(binary.BigEndian.Uint16(f[wire.EthHeaderLen+wire.OffFlags:]))&wire.FlagRetransmit == 0) {
		pp.probe = append(pp.probe[:0], f...)
		pp.probeReady = true
	}
}

func (rs *railSet) markDown(r int) {
	if rs.down&(1<<r) == 0 {
		rs.down |= 1 << r
		rs.st.downs++
	}
}

// isDown reports whether a send error means the interface is down or gone.
func isDown(err error) bool {
	return errors.Is(err, syscall.ENETDOWN) || errors.Is(err, syscall.ENXIO) ||
		errors.Is(err, syscall.ENODEV) || errors.Is(err, link.ErrInterfaceDown)
}

// Send sends one frame on its rail; if that rail's interface turns out to
// be down, on another.
func (rs *railSet) Send(f []byte) error {
	var err error
	for try := 0; try < rs.n; try++ {
		r, pp := rs.route(f)
		rs.rewrite(f, r, pp)
		if err = rs.links[r].Send(f); err == nil {
			rs.sent(pp, r, f)
			return nil
		}
		if !isDown(err) || rs.down&(1<<r) != 0 {
			return err
		}
		rs.markDown(r)
	}
	return err
}

// SendBatch sends frames, each on its rail, in order: every run of
// consecutive frames for one rail is one batch (one system call) on that
// rail, started only after the previous run's. It returns the index of the
// first frame that was not sent (later ones may have been), or
// len(frames).
func (rs *railSet) SendBatch(frames [][]byte) (int, error) {
	rs.pps = rs.pps[:0]
	for start := 0; start < len(frames); {
		r, pp := rs.route(frames[start])
		rs.rewrite(frames[start], r, pp)
		rs.pps = append(rs.pps, pp)
		end := start + 1
		for ; end < len(frames); end++ {
			r2, pp2 := rs.route(frames[end])
			if r2 != r {
				// Routed again with the run (route is deterministic for
				// data frames, the only ones sent in batches).
				break
			}
			rs.rewrite(frames[end], r, pp2)
			rs.pps = append(rs.pps, pp2)
		}
		run := frames[start:end]
		k, err := rs.links[r].SendBatch(run)
		for j := 0; j < k; j++ {
			rs.sent(rs.pps[start+j], r, run[j])
		}
		if err != nil {
			if !isDown(err) || rs.down&(1<<r) != 0 {
				return start + k, err
			}
			rs.markDown(r)
			for j := k; j < len(run); j++ {
				if err := rs.Send(run[j]); err != nil {
					return start + j, err
				}
			}
		}
		start = end
	}
	return len(frames), nil
}

// TxSlot lends a transmit-ring slot: on the rail of the last frame (the
// next frame of a batch usually goes there too), else on any rail that is
// not down, else on any rail.
func (rs *railSet) TxSlot() []byte {
	for pass := 0; pass < 2; pass++ {
		for k := 0; k < rs.n; k++ {
			r := (rs.slotRail + k) % rs.n
			if pass == 0 && rs.down&(1<<r) != 0 {
				continue
			}
			if s := rs.links[r].TxSlot(); s != nil {
				rs.slotLink, rs.slotBuf = r, s
				return s
			}
		}
		if rs.down&(1<<rs.n-1) != 1<<rs.n-1 {
			break // some rail is up: its ring is full, the engine flushes and retries
		}
	}
	return nil
}

// errNoSlot is returned by TxCommit when the frame's rail has no free slot
// (the engine retries the frame shortly).
var errNoSlot = errors.New("gm: rail transmit ring full")

// TxCommit queues the frame built in the slot of the last TxSlot on its
// rail: in place if the slot is on that rail, else copied into a slot of
// the right rail.
func (rs *railSet) TxCommit(n int) error {
	src, buf := rs.slotLink, rs.slotBuf
	rs.slotBuf = nil
	if n <= 0 || buf == nil {
		return nil
	}
	if n > len(buf) {
		return link.ErrFrameSize
	}
	f := buf[:n]
	r, pp := rs.route(f)
	if q := rs.queued &^ (1 << r); q != 0 {
		// The frame starts a run on another rail: start the previous
		// run's transmission first, so that the rails carry the frames
		// in order.
		rs.flush(q)
	}
	if r != src {
		d := rs.links[r].TxSlot()
		if d == nil {
			if err := rs.links[r].Flush(); err != nil && isDown(err) {
				rs.markDown(r)
			}
			d = rs.links[r].TxSlot()
		}
		if d == nil || n > len(d) {
			return errNoSlot
		}
		f = d[:copy(d, f)]
		rs.st.moved++
	}
	rs.rewrite(f, r, pp)
	if err := rs.links[r].TxCommit(n); err != nil {
		if isDown(err) {
			rs.markDown(r)
		}
		return err
	}
	rs.queued |= 1 << r
	rs.slotRail = r
	rs.sent(pp, r, f)
	return nil
}

// Flush starts the transmission of the frames committed on every rail.
// Frames queued on a rail that is down are left to the engine's
// retransmission.
func (rs *railSet) Flush() error { return rs.flush(rs.queued) }

// flush starts the transmission of the frames committed on the rails in
// mask q.
func (rs *railSet) flush(q uint8) error {
	var ferr error
	for ; q != 0; q &= q - 1 {
		r := bits.TrailingZeros8(q)
		if err := rs.links[r].Flush(); err != nil {
			if isDown(err) {
				rs.markDown(r)
			} else if ferr == nil {
				ferr = err
				continue // stays queued: the next Flush retries it
			}
		}
		rs.queued &^= 1 << r
	}
	return ferr
}

// ---- receive ----

// heard records that frame f arrived on rail i.
func (rs *railSet) heard(i int, f []byte, now time.Duration) {
	h := f[wire.EthHeaderLen:]
	pp := rs.peer(binary.BigEndian.Uint32(h[wire.OffSourceNode:]))
	if pp == nil {
		return
	}
	bit := uint8(1) << i
	pp.unanswered[i]++
	pp.txSince[i], pp.evidence[i] = 0, 0
	if pp.suspect&bit != 0 {
		pp.suspect &^= bit
		rs.st.revivals++
	}
	if t := wire.Type(h[wire.OffType]); t != wire.TypeAck && t != wire.TypeNack {
		return
	}
	// An answer on rail i: count it against the rails whose frames to the
	// peer have been unanswered for railEvidenceWait. maintain judges the
	// count: by then the rest of this drain may have brought an answer on
	// such a rail too (the rings are merged in stream order for data only).
	for r := 0; r < rs.n; r++ {
		if r != i && pp.txSince[r] != 0 && now-pp.txFirst[r] >= railEvidenceWait && pp.evidence[r] < 255 {
			pp.evidence[r]++
		}
	}
}

// suspectRail stops using rail r for pp, unless it is pp's last working
// rail.
func (rs *railSet) suspectRail(pp *railPeer, r int) {
	b := uint8(1) << r
	if (pp.has&^rs.down&^pp.suspect)&^b == 0 {
		return
	}
	pp.suspect |= b
	pp.evidence[r] = 0
	rs.st.suspicions++
}

// maintain checks the carriers, judges silent rails and sends probes; at
// most every railMaintEvery.
func (rs *railSet) maintain(now time.Duration) {
	if now-rs.lastMaint < railMaintEvery && rs.lastMaint != 0 {
		return
	}
	rs.lastMaint = now
	if now-rs.lastCarrier >= railCarrierEvery || rs.lastCarrier == 0 {
		rs.lastCarrier = now
		for i, l := range rs.links {
			if l.Running() {
				rs.down &^= 1 << i
			} else {
				rs.markDown(i)
			}
		}
	}
	for _, pp := range rs.peers {
		for r := 0; r < rs.n; r++ {
			b := uint8(1) << r
			if pp.txActive&b != 0 {
				pp.lastTx[r] = now
			}
			if pp.txSince[r] == 0 {
				continue
			}
			if now-pp.lastTx[r] >= railSilence {
				pp.txSince[r] = 0 // no longer sending on it: nothing to conclude
				continue
			}
			if pp.suspect&b != 0 || rs.down&b != 0 {
				continue
			}
			if pp.evidence[r] >= railEvidenceAcks {
				rs.suspectRail(pp, r)
			} else if pp.txSince[r] >= 3 && now-pp.txFirst[r] > railSilence {
				rs.suspectRail(pp, r)
			}
		}
		pp.txActive = 0
		if pp.probeReady && now-pp.lastProbe >= railProbeEvery {
			if cand := pp.suspect &^ rs.down & pp.has; cand != 0 {
				s := nth(cand, uint32(pp.probeNext))
				pp.probeNext++
				rs.rewrite(pp.probe, s, pp)
				if err := rs.links[s].Send(pp.probe); err != nil && isDown(err) {
					rs.markDown(s)
				}
				rs.st.probes++
			}
			pp.lastProbe, pp.probeReady = now, false
		}
	}
}

// fill reads a batch from ring i.
func (rs *railSet) fill(i int) int {
	n := rs.links[i].Recv(rs.fr[i])
	rs.b[i], rs.pos[i], rs.full[i] = rs.fr[i][:n], 0, n == len(rs.fr[i])
	return n
}

// pick returns the ring whose next frame goes to the engine next, -1 if
// every batch is consumed: a frame outside the reliable streams (an ack,
// whose order does not matter) at once, else a frame that no frame among the
// other rings' next railLook frames precedes in its stream (see held),
// rings taking turns among such frames. If every ring's next frame waits,
// one that may only wait for a batch not yet read goes first (from the
// ring with the fewest frames left in its batch: once a batch is consumed
// the next is read), and if all wait for a frame in sight (frames resent
// out of order can cross), one goes anyway.
func (rs *railSet) pick() int {
	cand, level := -1, heldSure+1
	for k := 0; k < rs.n; k++ {
		i := rs.pickNext + k
		if i >= rs.n {
			i -= rs.n
		}
		if rs.pos[i] >= len(rs.b[i]) {
			continue
		}
		f := rs.b[i][rs.pos[i]]
		if !inStream(f) {
			return i
		}
		l := rs.held(i, f)
		if l < level || l == heldMaybe && l == level && len(rs.b[i])-rs.pos[i] < len(rs.b[cand])-rs.pos[cand] {
			cand, level = i, l
			if l == heldNot {
				break
			}
		}
	}
	if cand >= 0 {
		if rs.pickNext++; rs.pickNext == rs.n {
			rs.pickNext = 0
		}
	}
	return cand
}

// Answers of held.
const (
	heldNot   = iota // nothing in sight precedes the frame
	heldMaybe        // a ring's next batch (not read yet) may
	heldSure         // a frame in sight does
)

// held reports whether stream frame f, next on ring i, must wait for an
// earlier frame of its stream on another ring: the first frame of f's
// stream among that ring's next railLook frames precedes f. A ring's
// frames of one stream follow each other in sequence order, so only the
// first one found matters (usually the ring's next frame). If the look
// reaches the end of a full batch, the next batch may hold such a frame.
func (rs *railSet) held(i int, f []byte) int {
	h := heldNot
	for j := 0; j < rs.n; j++ {
		if j == i {
			continue
		}
		b := rs.b[j]
		k, end := rs.pos[j], min(len(b), rs.pos[j]+railLook)
		for ; k < end; k++ {
			if sameStream(b[k], f) {
				if precedes(b[k], f) {
					return heldSure
				}
				break
			}
		}
		if k == len(b) && k < rs.pos[j]+railLook && rs.full[j] {
			h = heldMaybe
		}
	}
	return h
}

// inStream reports whether f is a frame of a reliable stream, numbered in
// its sequence (data, and the PUT, GET and GOT frames of tier 2).
func inStream(f []byte) bool {
	t := wire.Type(f[wire.EthHeaderLen+wire.OffType])
	return t >= wire.TypeData && t <= wire.TypeDataLast || t >= wire.TypePut && t <= wire.TypeGot
}

// sameStream reports whether stream frames a and b belong to the same
// stream (sender node and port, target port, priority and session).
func sameStream(a, b []byte) bool {
	ha, hb := a[wire.EthHeaderLen:], b[wire.EthHeaderLen:]
	return inStream(a) && inStream(b) &&
		ha[wire.OffTargetPort] == hb[wire.OffTargetPort] && ha[wire.OffSourcePort] == hb[wire.OffSourcePort] &&
		(ha[wire.OffFlags+1]^hb[wire.OffFlags+1])&byte(wire.FlagHigh) == 0 &&
		[8]byte(ha[wire.OffSourceNode:wire.OffSourceNode+8]) == [8]byte(hb[wire.OffSourceNode:wire.OffSourceNode+8])
}

// precedes reports whether stream frame a comes before stream frame b of
// the same stream.
func precedes(a, b []byte) bool {
	return sameStream(a, b) &&
		int32(binary.BigEndian.Uint32(a[wire.EthHeaderLen+wire.OffSeq:])-binary.BigEndian.Uint32(b[wire.EthHeaderLen+wire.OffSeq:])) < 0
}

// drain feeds the engine every frame waiting in the rails' rings, merged
// into stream order: it reads a batch from every ring and always passes on
// the frame that no other ring's next frame precedes in its stream. A ring
// whose batch was full (more may wait) is read again as soon as its batch
// is consumed, and a ring found empty is looked at again every
// railRecheck frames, so that no ring runs ahead of another by more than
// that. It sends what became due every railPumpEvery frames (Pump). It
// returns the number of frames and whether every ring was found empty
// (false: it stopped after about maxDrain frames, and the timers must wait
// for the next drain).
func (rs *railSet) drain(now time.Duration) (int, bool) {
	rs.maintain(now)
	got, pumped, checked := 0, 0, 0
	for i := range rs.links {
		rs.fill(i)
	}
	for {
		i := rs.pick()
		if i < 0 || (got-checked >= railRecheck && got < maxDrain) {
			if i < 0 && got >= maxDrain {
				if got > pumped {
					rs.eng.Pump(now)
				}
				return got, false
			}
			// Look again at every consumed ring.
			checked = got
			for j := range rs.links {
				if rs.pos[j] == len(rs.b[j]) {
					rs.fill(j)
				}
			}
			if i = rs.pick(); i < 0 {
				return got, true
			}
		}
		f := rs.b[i][rs.pos[i]]
		rs.pos[i]++
		rs.heard(i, f, now)
		rs.eng.Input(now, f)
		got++
		if rs.pos[i] == len(rs.b[i]) && rs.full[i] && got < maxDrain {
			checked = got
			for j := range rs.links {
				if rs.pos[j] == len(rs.b[j]) {
					rs.fill(j)
				}
			}
		}
		if got-pumped >= railPumpEvery {
			rs.eng.Pump(now)
			pumped = got
		}
	}
}
