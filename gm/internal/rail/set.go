package rail

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// MaxRails is the largest number of interfaces a unit may have.
const MaxRails = 8

// MaxDrain bounds the frames one Drain reads, so that a flood of frames
// cannot keep a Receive from returning.
const MaxDrain = 1024

// Tuning of the rail logic (see the package comment).
const (
	chunkFrames  = 32
	evidenceWait = 10 * time.Millisecond
	evidenceAcks = 3
	silence      = 50 * time.Millisecond
	probeEvery   = 50 * time.Millisecond
	carrierEvery = 20 * time.Millisecond
	maintEvery   = 2 * time.Millisecond
	// pumpEvery is how many frames Drain feeds the engine between two
	// Pump calls while the rings hold more (as a set of one does after
	// each full batch).
	pumpEvery = 64
	// recheck is how many frames Drain passes on between two looks at the
	// rings it found empty.
	recheck = 8
	// look is how far pick looks into another ring for an earlier frame
	// of a stream (past frames of other streams).
	look = 32
	// batch is the number of frames read from a ring at a time.
	batch = 64
)

// Engine is what a Set feeds received frames to (proto.Engine).
type Engine interface {
	Input(now time.Duration, frame []byte)
	Pump(now time.Duration)
}

// Set is the rails of a port: the engine's proto.Out (and proto.SlotOut),
// the port's reader of the rails' rings, and the table of the peers' MAC
// addresses. It is guarded by the port's mutex (every call but Wait, Wake,
// MACs, MTU, SetPorts, Close and LinkStats comes from under it), and its send side
// and its receive side are each used by one goroutine at a time.
type Set struct {
	links  []link.Endpoint
	caps   link.Caps   // the capabilities every link has
	waiter link.Waiter // sleeps on every rail
	n      int
	macs   [][6]byte // this host's MAC on each rail
	num    []int     // rail number of each link (see "Pairing")
	mtu    int       // the smallest MTU of the rails
	chunk  uint32    // bytes of payload per stripe chunk

	eng   Engine
	clock func() time.Duration

	// The peers' addresses: built from m, the map SetMap gave, as peers
	// are first used; rebuilt by SetMap.
	m     *nodemap.Map
	self  uint32 // this host's node id in m (0: not listed)
	peers map[uint32]*peer
	last  *peer

	down        uint8 // rails whose interface is down
	lastMaint   time.Duration
	lastCarrier time.Duration

	// Receive: the current batch of each ring.
	fr       [][][]byte
	b        [][][]byte
	pos      []int
	full     []bool
	pickNext int // ring pick looks at first

	// Transmit.
	pps      []*peer
	slotRail int    // rail of the next TxSlot (the last frame's)
	slotLink int    // rail whose slot the engine holds
	slotBuf  []byte // that slot
	queued   uint8  // rails with committed frames not yet flushed

	st counters
}

// counters count rail events (Debug, tests).
type counters struct {
	downs, suspicions, revivals, probes, moved uint64
}

// peer is the address and rail state of one peer node.
type peer struct {
	node       uint32
	mac        [MaxRails][6]byte // the peer's MAC on each of our rails
	has        uint8             // rails on which the peer can be reached
	suspect    uint8             // rails the peer does not answer on
	ackNext    int               // rail of the last answer (round robin)
	unanswered [MaxRails]uint32  // frames from the peer per rail since we last sent on it
	txSince    [MaxRails]uint32  // reliable frames sent per rail since the peer was last heard on it
	txFirst    [MaxRails]time.Duration
	lastTx     [MaxRails]time.Duration // when maintain last saw frames sent on the rail
	txActive   uint8                   // rails with frames sent since the last maintain
	evidence   [MaxRails]uint8         // answers on other rails while this one is unanswered
	probe      []byte                  // a recent frame to the peer, for probing suspect rails
	probeReady bool
	probeNext  int
	lastProbe  time.Duration
}

// New returns the set of rails over links (1 to MaxRails, open, each with
// a 6-byte MAC address and an MTU of at least link.MinMTU). The set owns
// the links (Close closes them). Attach and SetMap must follow before the
// engine uses it.
func New(links []link.Endpoint) *Set {
	n := len(links)
	s := &Set{
		links: links, n: n, macs: make([][6]byte, n), num: make([]int, n), mtu: links[0].MTU(),
		clock: func() time.Duration { return 0 },
		peers: map[uint32]*peer{},
		fr:    make([][][]byte, n), b: make([][][]byte, n), pos: make([]int, n), full: make([]bool, n),
	}
	s.caps = ^link.Caps(0)
	for i, l := range links {
		s.num[i] = i
		s.macs[i] = [6]byte(l.HardwareAddr())
		s.mtu = min(s.mtu, l.MTU())
		s.fr[i] = make([][]byte, batch)
		s.caps &= l.Caps()
		if !l.Running() {
			s.down |= 1 << i
		}
	}
	s.chunk = uint32(chunkFrames * (s.mtu - wire.HeaderLen))
	s.waiter = link.NewWaiter(links...)
	return s
}

// Attach connects the set to the engine it feeds and to the port's clock
// (the engine's time).
func (s *Set) Attach(eng Engine, clock func() time.Duration) {
	s.eng, s.clock = eng, clock
}

// ---- the port's view ----

// Len returns the number of rails.
func (s *Set) Len() int { return s.n }

// MACs returns this host's MAC on each rail, in the order of the links.
func (s *Set) MACs() [][6]byte { return s.macs }

// Geometry is the geometry of the set's link, or of the smallest of its
// rails: the fewest receive frames any rail bounds (0: none bounds them),
// the fewest transmit slots, and the largest ZeroCopyMin (0, never, if a
// rail never pays).
func (s *Set) Geometry() link.Geometry {
	g := s.links[0].Geometry()
	for _, l := range s.links[1:] {
		lg := l.Geometry()
		if lg.RxFrames > 0 && (g.RxFrames == 0 || lg.RxFrames < g.RxFrames) {
			g.RxFrames = lg.RxFrames
		}
		g.TxFrames = min(g.TxFrames, lg.TxFrames)
		if lg.ZeroCopyMin == 0 || g.ZeroCopyMin == 0 {
			g.ZeroCopyMin = 0
		} else {
			g.ZeroCopyMin = max(g.ZeroCopyMin, lg.ZeroCopyMin)
		}
	}
	return g
}

// MTU returns the MTU frames are cut to: the smallest of the rails'.
func (s *Set) MTU() int { return s.mtu }

// Wake makes a concurrent or the next Wait return.
func (s *Set) Wake() { s.links[0].Wake() }

// SetPorts narrows (or widens) the target ports every rail's link receives,
// on the links that can change it (link.CapPortFilter); the others keep
// delivering every port's frames. It returns the first error. Like Close,
// it may be called without the port's mutex, from one goroutine at a time.
func (s *Set) SetPorts(ports link.PortMask) error {
	var err error
	for _, l := range s.links {
		if serr := l.SetPorts(ports); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// Close closes every rail's link and returns the first error.
func (s *Set) Close() error {
	var err error
	for _, l := range s.links {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// LinkStats returns the sums of the rails' link counters (Mode lists the
// rails' modes if they differ).
func (s *Set) LinkStats() link.Stats {
	var st link.Stats
	modes := make([]string, s.n)
	same := true
	for i, l := range s.links {
		ls := l.Stats()
		st.RxFrames += ls.RxFrames
		st.RxBytes += ls.RxBytes
		st.TxFrames += ls.TxFrames
		st.TxBytes += ls.TxBytes
		st.KernelDrops += ls.KernelDrops
		st.QueueFreezes += ls.QueueFreezes
		st.CRCErrors += ls.CRCErrors
		st.Malformed += ls.Malformed
		st.AuthFailures += ls.AuthFailures
		st.ForeignPartition += ls.ForeignPartition
		modes[i] = ls.Mode
		same = same && ls.Mode == modes[0]
	}
	st.Mode = modes[0]
	if !same {
		st.Mode = strings.Join(modes, " / ")
	}
	return st
}

// Stats describes one rail (interface) of a port's unit.
type Stats struct {
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

// Stats returns the names and link counters of the rails (without their
// state: see State). It may be called from any goroutine.
func (s *Set) Stats() []Stats {
	out := make([]Stats, s.n)
	for i, l := range s.links {
		out[i] = Stats{Interface: l.Name(), Link: l.Stats()}
	}
	return out
}

// State fills in the Down and SuspectPeers fields of out (from Stats).
func (s *Set) State(out []Stats) {
	for i := range out {
		out[i].Down = s.down&(1<<i) != 0
		for _, pp := range s.peers {
			if pp.suspect&(1<<i) != 0 {
				out[i].SuspectPeers++
			}
		}
	}
}

// Debug describes the rails' state for people.
func (s *Set) Debug() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  rails:")
	for i, l := range s.links {
		st := "up"
		if s.down&(1<<i) != 0 {
			st = "down"
		}
		ls := l.Stats()
		fmt.Fprintf(&b, " %s(#%d %s tx %d rx %d)", l.Name(), s.num[i], st, ls.TxFrames, ls.RxFrames)
	}
	fmt.Fprintf(&b, " downs %d suspicions %d revivals %d probes %d moved %d\n",
		s.st.downs, s.st.suspicions, s.st.revivals, s.st.probes, s.st.moved)
	for _, pp := range s.peers {
		fmt.Fprintf(&b, "    peer %d: rails %0*b suspect %0*b unanswered %v txSince %v\n",
			pp.node, s.n, pp.has, s.n, pp.suspect, pp.unanswered[:s.n], pp.txSince[:s.n])
	}
	return b.String()
}

// ---- peers and the node map ----

// SetMap adopts node map m, in which this host is node self (0 if m does
// not list it): the rails' numbers and every peer's MACs. It is the one
// place where a map change reaches the peers' addresses; the engine's
// copies (Resolve, Sources) must be dropped with it
// (proto.Engine.InvalidatePeers).
func (s *Set) SetMap(m *nodemap.Map, self uint32) {
	s.m, s.self, s.last = m, self, nil
	own, _ := m.ByID(nodemap.NodeID(self))
	for i := range s.num {
		s.num[i] = i
		for j, mac := range own.MACs {
			if mac == s.macs[i] {
				s.num[i] = j
			}
		}
	}
	for node, pp := range s.peers {
		e, ok := m.ByID(nodemap.NodeID(node))
		if !ok {
			delete(s.peers, node)
			continue
		}
		s.setMACs(pp, e)
	}
}

// Resolve maps a node id to the MAC its frames go to (proto's
// Config.Resolve): this host's first MAC for itself, else the peer's MAC
// on the first rail that reaches it; false if the map does not know the
// node or has no route to it.
func (s *Set) Resolve(node uint32) ([6]byte, bool) {
	if node == s.self && node != 0 {
		return s.macs[0], true
	}
	pp := s.peer(node)
	if pp == nil {
		return [6]byte{}, false
	}
	return pp.mac[bits.TrailingZeros8(pp.has)], true
}

// Sources fills dst with the MACs frames from node may come from (proto's
// Config.Sources): its MACs in the node map and those its routes name, or
// this host's rails' for itself. It returns how many it wrote.
func (s *Set) Sources(node uint32, dst [][6]byte) int {
	if node == s.self && node != 0 {
		return copy(dst, s.macs)
	}
	e, ok := s.m.ByID(nodemap.NodeID(node))
	if !ok {
		return 0
	}
	n := copy(dst, e.MACs)
	for _, r := range s.m.RoutesTo(e.ID) {
		if n < len(dst) && !slices.Contains(dst[:n], r.Peer) {
			dst[n] = r.Peer
			n++
		}
	}
	return n
}

// peer returns the state of node, or nil if the node map does not know it
// or has no route to it.
func (s *Set) peer(node uint32) *peer {
	if pp := s.last; pp != nil && pp.node == node {
		return pp
	}
	pp := s.peers[node]
	if pp == nil {
		e, ok := s.m.ByID(nodemap.NodeID(node))
		if !ok {
			return nil
		}
		pp = &peer{node: node}
		s.setMACs(pp, e)
		s.peers[node] = pp
	}
	if pp.has == 0 {
		return nil // the map has no route to the node
	}
	s.last = pp
	return pp
}

// railPeer returns the rail state of node for choosing among the rails
// (route) and learning which rails the peer answers on (heard): peer's, or
// nil if the node is unknown. With one rail there is nothing to choose
// and nothing to learn, so it is nil too: route, rewrite, sent and heard
// then cost a few instructions per frame instead of a peer lookup, the
// per-peer counters and a clock read per message, which a set of one
// would compute for nothing: without this shortcut BenchmarkFakeRails1Hop
// costs several times as much. It is the one place where a set of one
// takes a shortcut.
func (s *Set) railPeer(node uint32) *peer {
	if s.n == 1 {
		return nil
	}
	return s.peer(node)
}

// setMACs sets pp's MAC on each rail from its map entry e (see "Pairing").
func (s *Set) setMACs(pp *peer, e nodemap.Entry) {
	pp.has = 0
	if s.m.Routed() {
		// A map made by a mapper says which of the peer's MACs each of
		// our interfaces reaches; a rail without a route to the peer does
		// not carry its traffic.
		for i, local := range s.macs {
			if mac, ok := s.m.PeerMAC(nodemap.NodeID(s.self), e.ID, local); ok {
				pp.mac[i] = mac
				pp.has |= 1 << i
			}
		}
		pp.suspect &= pp.has
		return
	}
	for i, n := range s.num {
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
func (s *Set) usable(pp *peer) uint8 {
	if u := pp.has &^ s.down &^ pp.suspect; u != 0 {
		return u
	}
	if u := pp.has &^ s.down; u != 0 {
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
