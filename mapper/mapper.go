package mapper

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Time is virtual time: a monotonic duration since an origin the driver
// chooses (for example time.Since(start)).
type Time = time.Duration

// Defaults.
const (
	// DefaultVerifyInterval is the period of the scouts every host
	// broadcasts on every rail once started.
	DefaultVerifyInterval = 250 * time.Millisecond
	// MaxVerifyInterval is the longest VerifyInterval accepted.
	MaxVerifyInterval = time.Second
	// DefaultNumPasses is the number of fast scout passes a starting
	// mapper makes before it declares a first map.
	DefaultNumPasses = 3
	// DefaultMTU is the link MTU assumed when Config.MTU is 0.
	DefaultMTU = 1500
	// MissedIntervals is the number of verification intervals without a
	// frame after which a peer's interface (or the whole peer, or the
	// mapper in charge) is declared gone.
	MissedIntervals = 3
)

// Config configures a Mapper.
type Config struct {
	// Host is this host's name (nodemap.ValidHostName).
	Host string
	// Level is the mapper level: 0 = never map (only answer and follow);
	// the mapper in charge is the one with the highest (Level, unique id).
	Level uint8
	// MACs are this unit's interfaces (rails) in unit order; MACs[0] is
	// the host's unique id. 1..nodemap.MaxRails, all distinct and nonzero.
	MACs []nodemap.MAC
	// EtherType is the EtherType of the frames (0 = wire.EtherType).
	EtherType uint16
	// VerifyInterval is the scout period (0 = DefaultVerifyInterval; at
	// most MaxVerifyInterval).
	VerifyInterval Time
	// NumPasses is the number of fast scout passes at startup before a
	// first map is declared (0 = DefaultNumPasses). Passes run every
	// VerifyInterval/5.
	NumPasses int
	// State is the persisted state the driver loaded (hosts table with
	// node ids, last map version); the zero value is a fresh start.
	State State
	// VersionFloor is a lower bound for new map versions, for example the
	// seconds since 2024-01-01, so versions grow across restarts even if
	// the state was lost.
	VersionFloor uint32
	// MTU is the link MTU (0 = DefaultMTU); CONFIG frames are cut to fit.
	MTU int
}

// Output is how a Mapper acts on the world. Its methods are called from
// within Input, Tick and SetRailUp, on the caller's goroutine.
type Output interface {
	// Send transmits frame, a complete Ethernet frame (destination, source =
	// that rail's MAC, EtherType, EtherGM header, body, CRC), on rail. The
	// frame must not be retained after Send returns.
	Send(rail int, frame []byte)
	// InstallMap gives the node map for this host, including this host's
	// routes. The driver writes it atomically where the ports read it. It
	// is called for every new map version, and again with the same version
	// when only this host's routes changed.
	InstallMap(m *nodemap.Map)
	// SaveState persists s (hosts file, last map version). With sync, s
	// records a version this host made and is about to use on the wire
	// (its CONFIG frames follow): SaveState returns once s is on disk, so
	// that a restart never issues that version again. Without sync (a
	// version another mapper made, installed here) the driver may write
	// s later; a newer state replaces one not yet written.
	SaveState(s State, sync bool)
}

// Mapper is the mapper's state machine for one unit (all its rails).
type Mapper struct {
	cfg Config
	out Output

	// timings derived from cfg
	interval Time // verify interval
	pass     Time // startup pass interval
	dead     Time // silence after which a peer (MAC) is gone
	retry    Time // table hand-over retransmission interval
	// configRetry is the CONFIG retransmission interval: a follower
	// reads its rings every half interval (RecvDelay) and acknowledges
	// at once, so a retry sooner than that and a pass would send the map
	// again to every host that has not looked yet, and make every host
	// that has acknowledge again, the most work when the hosts are
	// slowest.
	configRetry Time

	self selfState
	net  netState
	tbl  table       // the hosts table (node ids)
	cur  installed   // the map installed on this host
	asm  assembly    // a map being received
	lead leaderState // distribution, while this host leads
	hand handover    // a table handed over to a new leader

	// lost is the time this host was too slow to run the Mapper: the sum
	// of the delays of its late calls (see clock). Internal times are
	// the driver's minus lost.
	lost Time

	elected      nodemap.MAC // the mapper in charge as this host sees it (zero: none)
	electedLevel uint8
	lastVersion  uint32 // highest version used or installed (persisted)
	dups         []Duplicate

	counters            Counters
	framesIn, framesOut [256]uint64 // by wire.Type
	buf                 []byte      // frame being built
	body                []byte      // body being built
}

// Errors of New.
var ErrConfig = errors.New("mapper: invalid configuration")

// New returns a Mapper for cfg that acts through out. It checks cfg and
// returns an error wrapping ErrConfig if it is unusable. The Mapper sends
// nothing until its first Tick.
func New(cfg Config, out Output) (*Mapper, error) {
	if out == nil {
		return nil, fmt.Errorf("%w: nil Output", ErrConfig)
	}
	if !nodemap.ValidHostName(cfg.Host) {
		return nil, fmt.Errorf("%w: bad host name %q", ErrConfig, cfg.Host)
	}
	if len(cfg.MACs) == 0 || len(cfg.MACs) > nodemap.MaxRails {
		return nil, fmt.Errorf("%w: %d interfaces (1..%d)", ErrConfig, len(cfg.MACs), nodemap.MaxRails)
	}
	for i, mac := range cfg.MACs {
		if mac == (nodemap.MAC{}) || mac[0]&1 != 0 {
			return nil, fmt.Errorf("%w: rail %d: bad MAC address %s", ErrConfig, i, nodemap.FormatMAC(mac))
		}
		for _, other := range cfg.MACs[:i] {
			if other == mac {
				return nil, fmt.Errorf("%w: MAC address %s listed twice", ErrConfig, nodemap.FormatMAC(mac))
			}
		}
	}
	if cfg.EtherType == 0 {
		cfg.EtherType = wire.EtherType
	}
	if cfg.VerifyInterval == 0 {
		cfg.VerifyInterval = DefaultVerifyInterval
	}
	if cfg.VerifyInterval < 10*time.Millisecond || cfg.VerifyInterval > MaxVerifyInterval {
		return nil, fmt.Errorf("%w: verify interval %v (10ms..%v)", ErrConfig, cfg.VerifyInterval, MaxVerifyInterval)
	}
	if cfg.NumPasses == 0 {
		cfg.NumPasses = DefaultNumPasses
	}
	if cfg.NumPasses < 1 || cfg.NumPasses > 100 {
		return nil, fmt.Errorf("%w: %d passes (1..100)", ErrConfig, cfg.NumPasses)
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 576 || cfg.MTU > 65535 {
		return nil, fmt.Errorf("%w: MTU %d (576..65535)", ErrConfig, cfg.MTU)
	}
	m := &Mapper{cfg: cfg, out: out}
	m.init()
	return m, nil
}

// Input handles a frame received on rail: a complete Ethernet frame.
// Frames that are not EtherGM mapper frames, malformed, forged-looking or
// stale are counted in Status().Counters.Drops and dropped. frame is not
// retained.
func (m *Mapper) Input(now Time, rail int, frame []byte) {
	now = m.clock(now)
	m.input(now, rail, frame)
	if m.lead.announce {
		m.sendScouts(now)
	}
}

// Tick runs the timers due at now. Call it when now >= NextDeadline().
// A Tick (or an Input) much later than NextDeadline is taken for a stall
// of this host, not a silence of its peers: the delay is left out of the
// Mapper's time (see clock), so that the frames that waited meanwhile are
// read before any peer is judged gone.
func (m *Mapper) Tick(now Time) {
	m.tick(m.clock(now))
}

// NextDeadline returns when Tick must run next. Before the first Tick it
// returns 0.
func (m *Mapper) NextDeadline() Time {
	if !m.self.started {
		return 0
	}
	return m.nextDeadline() + m.lost
}

// SetRailUp tells the Mapper that the interface of rail went up or down
// (or disappeared: down). All rails start up.
func (m *Mapper) SetRailUp(rail int, up bool, now Time) {
	m.setRailUp(rail, up, m.clock(now))
}

// FramesLost tells the Mapper that frames received on rail between since
// and now (the driver's times: its previous look at the rail's receive
// ring and this one) were lost: the kernel dropped them from a full ring
// (the link's Stats().KernelDrops grew). Call it before handing over the
// frames read at now.
//
// A host that loses frames cannot tell a peer that went quiet from one
// whose frames it dropped, so it judges no peer silent over a window in
// which it lost frames: whatever was heard on rail and alive at since
// counts as heard at now (see framesLost). Otherwise a mapper in charge
// whose rings overflow (a burst of takeovers, a starved machine) maps
// absent the followers whose SCOUTs it dropped, and present again when it
// hears them, a new map version each time, which costs every host again;
// and a follower that dropped its mapper's SCOUTs searches for a new one,
// broadcasting to all. A peer that left while frames were lost is noticed
// a liveness window after the losses stop, or once it has not been heard
// for forgetIntervals, whichever comes first.
func (m *Mapper) FramesLost(rail int, since, now Time) {
	// since, the driver's previous look, converts with the stall time as
	// it was then: clock may add a stall that began after it.
	lost := m.lost
	now = m.clock(now)
	m.framesLost(rail, since-lost, now)
}

// forgetIntervals is how many verification intervals a peer not heard is
// kept (expire), and the longest that lost frames (FramesLost) keep a
// peer alive that is not heard.
const forgetIntervals = 20

// framesLost counts the loss window (since, now] on rail (Mapper times)
// as hearing, at now, every MAC heard on rail and alive at since (and so
// its host, and the rail), unless its host was last heard more than
// forgetIntervals ago.
func (m *Mapper) framesLost(rail int, since, now Time) {
	if rail < 0 || rail >= len(m.cfg.MACs) || !m.self.started {
		return
	}
	since = min(since, now)
	m.counters.LossWindows++
	if m.alive(m.self.railHeard[rail], since) {
		m.self.railHeard[rail] = now
	}
	for _, p := range m.net.peers {
		if now-p.heardAt > forgetIntervals*m.interval {
			continue
		}
		here := false
		for i := range p.numRails {
			if h := m.net.macs[p.rails[i].MAC]; h != nil && m.alive(h[rail], since) {
				h[rail] = now
				here = true
			}
		}
		if here && m.alive(p.lastSeen, since) {
			p.lastSeen = now
		}
	}
}

// clock converts the driver's time into the Mapper's. A call that comes
// later than stallSlack after the deadline NextDeadline gave means that
// the host was too slow to run the Mapper (CPU starvation, a stopped
// process): its timers ran late and the peers' frames waited unread in
// its receive rings. That time does not count: to the Mapper it is as if
// the call came stallSlack after the deadline, and no timer runs for
// another stallSlack, while the driver reads the frames that waited (a
// late Tick comes before them). Otherwise a slow host would find its
// peers silent for the liveness window when it runs again and, before
// reading the frames waiting for it, drop their routes (install its map
// again, same version, without them), declare them absent, take over from
// a mapper in charge that never stopped, or issue a version another
// mapper's map already uses. A peer that really went away during the
// stall is noticed that much later.
func (m *Mapper) clock(now Time) Time {
	now -= m.lost
	if !m.self.started {
		return now
	}
	if due := m.nextDeadline() + m.stallSlack(); now > due {
		m.lost += now - due
		m.counters.Stalls++
		m.self.quietUntil = due + m.stallSlack()
		return due
	}
	return now
}

// stallSlack is how late a call may come before the delay is left out of
// the Mapper's time (see clock).
func (m *Mapper) stallSlack() Time { return m.pass }

// Map returns the map installed on this host (nil before the first one).
func (m *Mapper) Map() *nodemap.Map {
	return m.cur.m
}

// input dispatches a received frame.
func (m *Mapper) input(now Time, rail int, frame []byte) {
	if rail < 0 || rail >= len(m.cfg.MACs) {
		m.drop(DropRail)
		return
	}
	h, err := wire.ParseFrameCRC(frame, m.cfg.EtherType)
	if err != nil {
		if errors.Is(err, wire.ErrEtherType) {
			m.drop(DropNotMapper)
		} else {
			m.drop(DropMalformed)
		}
		return
	}
	t := h.Type()
	if !t.IsMapper() || h.TargetPort() != mapperPort || h.SourcePort() != mapperPort {
		m.drop(DropNotMapper)
		return
	}
	m.framesIn[t]++
	if !m.self.railUp[rail] {
		m.drop(DropRailDown)
		return
	}
	// Our own frames come back when two of our rails share a segment; the
	// bodies say whose they are. A frame from one of our MACs whose body
	// names another host is a MAC claimed twice (onHostInfo).
	src := nodemap.MAC(frame[6:12])
	if src[0]&1 != 0 || src == (nodemap.MAC{}) {
		m.drop(DropForged)
		return
	}
	m.start(now)
	body := h.Payload()
	switch t {
	case wire.TypeScout, wire.TypeScoutReply:
		hi, err := wire.ParseHostInfo(body)
		if err != nil {
			m.bodyErr(err)
			return
		}
		m.onHostInfo(now, rail, src, t, &hi)
	case wire.TypeConfig:
		c, err := wire.ParseConfig(body)
		if err != nil {
			m.bodyErr(err)
			return
		}
		m.onConfig(now, rail, src, &c)
	case wire.TypeConfigAck:
		a, err := wire.ParseConfigAck(body)
		if err != nil {
			m.bodyErr(err)
			return
		}
		m.onConfigAck(now, rail, src, &a)
	}
}

func (m *Mapper) bodyErr(err error) {
	if errors.Is(err, wire.ErrMapperRev) {
		m.drop(DropRevision)
	} else {
		m.drop(DropBody)
	}
}

func (m *Mapper) drop(reason string) { m.counters.Drops[reason]++ }

// mapperPort is the GM port of all mapper frames.
const mapperPort = 1

// send builds a mapper frame with body and hands it to Output.Send.
func (m *Mapper) send(rail int, dst nodemap.MAC, t wire.Type, tnode uint32, seq uint32, body []byte) {
	f := wire.HeaderFields{
		Type: t, TargetPort: mapperPort, SourcePort: mapperPort,
		TargetNode: tnode, SourceNode: uint32(m.cur.self), Seq: seq, MsgLen: uint32(len(body)),
	}
	m.buf = wire.AppendFrame(m.buf[:0], dst, m.cfg.MACs[rail], m.cfg.EtherType, &f, body)
	m.framesOut[t]++
	m.out.Send(rail, m.buf)
}

// tick runs the timers.
func (m *Mapper) tick(now Time) {
	m.start(now)
	if now < m.self.quietUntil {
		return
	}
	if m.searching() && now >= m.self.searchUntil {
		m.self.searchUntil = never
		m.elect(now)
		if m.lead.announce {
			m.sendScouts(now)
		}
	}
	if now >= m.self.nextScout {
		m.scoutTick(now)
	}
	if m.leading() {
		m.leaderTick(now)
	}
	if m.hand.next != never && now >= m.hand.next {
		m.handTick(now)
	}
}

// nextDeadline is the earliest timer.
func (m *Mapper) nextDeadline() Time {
	if !m.self.started {
		return 0
	}
	d := m.self.nextScout
	if m.leading() {
		if m.lead.nextIssue != never {
			d = min(d, m.lead.nextIssue)
		}
		if m.lead.nextRetry != never {
			d = min(d, m.lead.nextRetry)
		}
	}
	if m.hand.next != never {
		d = min(d, m.hand.next)
	}
	if m.searching() {
		d = min(d, m.self.searchUntil)
	}
	return max(d, m.self.quietUntil)
}
