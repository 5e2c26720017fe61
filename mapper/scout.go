package mapper

import (
	"math"
	"slices"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// never is the time of an event that never happened.
const never Time = math.MinInt64 / 4

// selfState is this host's own discovery state.
type selfState struct {
	started   bool
	startAt   Time
	starting  bool // within the startup passes
	passes    int  // startup passes sent
	nextScout Time
	lastScout Time
	seq       uint32
	railUp    []bool
	railHeard []Time // last frame from another host, per rail
	// searchUntil: the mapper this host followed went silent, and this
	// host broadcasts its SCOUTs and hears the others' until then before
	// it may lead (never: not searching). See elect.
	searchUntil Time
	dsts        []nodemap.MAC // targets of a SCOUT being sent
	// quietUntil: after a stall no timer runs before it, so that the
	// frames that waited in the rings are read first (see clock).
	quietUntil Time
}

// peer is another host heard directly on at least one rail.
type peer struct {
	uid        nodemap.MAC
	name       string
	level      uint8
	flags      wire.HostFlags
	numRails   int
	rails      [wire.MaxRails]wire.HostRail
	mapVersion uint32
	mapper     nodemap.MAC
	nodeID     uint32
	// lastSeen is when it was last heard, or counted as heard over a
	// window in which this host lost frames (FramesLost); heardAt when
	// its last SCOUT came.
	lastSeen Time
	heardAt  Time
	replied  [wire.MaxRails]Time // last SCOUT_REPLY sent to it, per local rail
}

// heard records, per local rail, when an interface MAC of a peer was last
// heard.
type heard [wire.MaxRails]Time

// netState is what this host knows of the others.
type netState struct {
	peers map[nodemap.MAC]*peer
	macs  map[nodemap.MAC]*heard // peer interface MAC -> last heard per local rail
	// maxVersion is the highest map version seen in any frame.
	maxVersion uint32
	// conflicts are unique ids used by two hosts at once.
	conflicts map[nodemap.MAC]*uidConflict
	// leaders are the peers whose last SCOUT had the leader flag: with
	// the elected one, the few a follower sends its SCOUTs to (targets).
	leaders map[nodemap.MAC]*peer
}

func (m *Mapper) init() {
	iv := m.cfg.VerifyInterval
	m.interval = iv
	m.pass = iv / 5
	m.dead = MissedIntervals*iv + iv/2
	m.retry = min(iv/2, 100*time.Millisecond)
	m.configRetry = iv/2 + m.pass
	n := len(m.cfg.MACs)
	m.self.searchUntil = never
	m.self.railUp = make([]bool, n)
	m.self.railHeard = make([]Time, n)
	for i := range n {
		m.self.railUp[i] = true
		m.self.railHeard[i] = never
	}
	m.net.peers = make(map[nodemap.MAC]*peer)
	m.net.macs = make(map[nodemap.MAC]*heard)
	m.net.conflicts = make(map[nodemap.MAC]*uidConflict)
	m.net.leaders = make(map[nodemap.MAC]*peer)
	m.tbl.load(m.cfg.State.Hosts)
	m.lastVersion = m.cfg.State.LastVersion
	m.counters = Counters{Drops: map[string]uint64{}}
	m.lead.nextIssue, m.lead.nextRetry, m.hand.next = never, never, never
	m.cur.lastAck = never
}

func (m *Mapper) start(now Time) {
	if m.self.started {
		return
	}
	m.self.started = true
	m.self.startAt = now
	m.self.starting = true
	m.self.nextScout = now
	m.self.lastScout = never
}

// alive reports whether t is within the liveness window before now.
func (m *Mapper) alive(t, now Time) bool { return t != never && now-t <= m.dead }

// selfInfo fills the HostInfo that describes this host.
func (m *Mapper) selfInfo(now Time, h *wire.HostInfo) {
	*h = wire.HostInfo{
		UniqueID:   m.cfg.MACs[0],
		Level:      m.cfg.Level,
		MapVersion: m.cur.version,
		MapperID:   m.cur.mapper,
		NodeID:     uint32(m.cur.self),
		NumRails:   uint8(len(m.cfg.MACs)),
		Name:       []byte(m.cfg.Host),
	}
	if m.self.starting {
		h.Flags |= wire.HostHello
	}
	if m.leading() {
		h.Flags |= wire.HostLeader
	}
	if m.configured() {
		h.Flags |= wire.HostConfigured
	}
	for r, mac := range m.cfg.MACs {
		var st wire.RailState
		if m.self.railUp[r] {
			st |= wire.RailUp
			if m.alive(m.self.railHeard[r], now) {
				st |= wire.RailHearing
			}
		}
		h.Rails[r] = wire.HostRail{MAC: mac, State: st}
	}
}

// sendScouts sends a SCOUT on every up rail: unicast to the mappers in
// charge this host hears there (see targets), else broadcast.
func (m *Mapper) sendScouts(now Time) {
	m.lead.announce = false
	var h wire.HostInfo
	m.selfInfo(now, &h)
	m.self.seq++
	body, err := wire.AppendHostInfo(m.body[:0], &h)
	if err != nil {
		return // New checked the name
	}
	m.body = body
	for r, up := range m.self.railUp {
		if !up {
			continue
		}
		dsts := m.targets(r, now)
		if len(dsts) == 0 {
			m.send(r, wire.Broadcast, wire.TypeScout, 0, m.self.seq, body)
			continue
		}
		for _, dst := range dsts {
			var tnode uint32
			if e, ok := m.cur.m.ByMAC(dst); ok {
				tnode = uint32(e.ID)
			}
			m.send(r, dst, wire.TypeScout, tnode, m.self.seq, body)
		}
	}
	m.self.lastScout = now
}

// targets returns the MACs to which a follower sends its SCOUT on rail r
// instead of broadcasting it: the mapper it follows and any other mapper
// in charge it hears on r. Only they need it: they number the hosts, and
// routes come with their maps (routes.go). So a follower sends one frame
// per rail per interval and hears one (its mapper's SCOUT), and the
// mapper in charge hears every host: O(N) frames per interval, not N².
// A host broadcasts (nil) while it starts, searches for a new mapper or
// leads, and on a rail where it hears no mapper in charge, whose peers
// then learn their routes there by hearing it.
func (m *Mapper) targets(r int, now Time) []nodemap.MAC {
	if m.self.starting || m.searching() || m.leading() {
		return nil
	}
	dsts := m.self.dsts[:0]
	add := func(p *peer) {
		if m.peerAlive(p, now) {
			if i, ok := m.pickRail(p, r, now); ok {
				dsts = append(dsts, p.rails[i].MAC)
			}
		}
	}
	for _, p := range m.net.leaders {
		add(p)
	}
	// The mapper this host will follow once it has made its startup
	// passes.
	if p := m.net.peers[m.elected]; p != nil && p.flags&(wire.HostLeader|wire.HostHello) == wire.HostHello {
		add(p)
	}
	if len(dsts) > 1 {
		slices.SortFunc(dsts, compareMAC)
	}
	m.self.dsts = dsts
	return dsts
}

// answersHello reports whether this host answers a hello from src on rail.
func (m *Mapper) answersHello(rail int, src nodemap.MAC, now Time) bool {
	if m.leading() {
		return true
	}
	dsts := m.targets(rail, now)
	return len(dsts) == 0 || slices.Contains(dsts, src)
}

// searching reports whether this host looks for a new mapper in charge
// (see elect).
func (m *Mapper) searching() bool { return m.self.searchUntil != never }

// nudge brings this host's next scout round forward to within a startup
// pass, by an offset its unique id fixes (spread evenly across hosts), so
// that a new mapper in charge hears every follower soon and not all at
// once; at most four rounds per interval.
func (m *Mapper) nudge(now Time) {
	if !m.self.started || m.self.starting {
		return
	}
	m.self.nextScout = min(m.self.nextScout, max(now+m.jitter(), m.self.lastScout+m.interval/4))
}

// jitter is this host's offset in [0, pass): a hash of its unique id.
func (m *Mapper) jitter() Time {
	h := uint64(14695981039346656037)
	for _, b := range m.cfg.MACs[0] {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return Time(h % uint64(m.pass))
}

// scoutTick runs the periodic scout round: liveness, election, scouts,
// routes.
func (m *Mapper) scoutTick(now Time) {
	m.expire(now)
	m.elect(now)
	m.changed(now)
	m.sendScouts(now)
	if m.self.starting {
		m.self.passes++
		if m.self.passes >= m.cfg.NumPasses {
			m.self.starting = false
			m.elect(now)
		}
	}
	if m.self.starting {
		m.self.nextScout = now + m.pass
	} else {
		m.self.nextScout = now + m.interval
	}
	if m.lead.announce {
		// It leads from now on: the hosts that follow it learn it from
		// its SCOUT, and send theirs to it.
		m.sendScouts(now)
	}
	m.refreshRoutes(now)
}

// expire forgets peers silent for long; the hosts table keeps them.
func (m *Mapper) expire(now Time) {
	forget := forgetIntervals * m.interval
	for uid, c := range m.net.conflicts {
		if now-c.last > m.dead {
			delete(m.net.conflicts, uid)
		}
	}
	for uid, p := range m.net.peers {
		if now-p.heardAt > forget {
			delete(m.net.peers, uid)
			delete(m.net.leaders, uid)
			for i := range p.numRails {
				delete(m.net.macs, p.rails[i].MAC)
			}
		}
	}
}

// hear notes that mac was heard on local rail at now.
func (m *Mapper) hear(rail int, mac nodemap.MAC, now Time) {
	h := m.net.macs[mac]
	if h == nil {
		h = new(heard)
		for i := range h {
			h[i] = never
		}
		m.net.macs[mac] = h
	}
	h[rail] = now
	m.self.railHeard[rail] = now
}

// peerAlive reports whether p was heard on any rail recently.
func (m *Mapper) peerAlive(p *peer, now Time) bool { return m.alive(p.lastSeen, now) }

// onHostInfo handles a SCOUT or SCOUT_REPLY.
func (m *Mapper) onHostInfo(now Time, rail int, src nodemap.MAC, t wire.Type, h *wire.HostInfo) {
	if h.UniqueID == m.cfg.MACs[0] {
		switch {
		case string(h.Name) != m.cfg.Host || !m.ownRails(h):
			// Another host uses our unique id.
			m.conflict(h.UniqueID, m.cfg.Host, string(h.Name), now)
			m.drop(DropConflict)
		case slices.Contains(m.cfg.MACs, src):
			m.drop(DropSelf)
		default:
			m.drop(DropForged)
		}
		return
	}
	pr := -1
	for i := range int(h.NumRails) {
		if h.Rails[i].MAC == src {
			pr = i
		}
	}
	if pr < 0 {
		m.drop(DropForged)
		return
	}
	p := m.net.peers[h.UniqueID]
	if p != nil && m.peerAlive(p, now) &&
		(p.name != string(h.Name) || p.numRails != int(h.NumRails) || !sameMACs(p, h)) {
		// A host changes its name or interfaces only by restarting its
		// mapper: while the old identity is still heard, two hosts use
		// one unique id. The one heard first keeps it; a host that
		// really changed is taken once its old identity has been silent
		// for the liveness window.
		m.conflict(h.UniqueID, p.name, string(h.Name), now)
		m.drop(DropConflict)
		return
	}
	name := ""
	if p != nil && p.name == string(h.Name) {
		name = p.name
	} else if name = string(h.Name); !nodemap.ValidHostName(name) {
		m.drop(DropName)
		return
	}
	if p == nil {
		p = &peer{uid: h.UniqueID}
		for i := range p.replied {
			p.replied[i] = never
		}
		m.net.peers[h.UniqueID] = p
	}
	wasAlive := m.peerAlive(p, now)
	wasCandidate := wasAlive && p.level > 0
	newLeader := h.Flags&wire.HostLeader != 0 && (!wasAlive || p.flags&wire.HostLeader == 0)
	changed := !wasAlive || p.name != name || p.level != h.Level
	if p.numRails != int(h.NumRails) || p.rails != h.Rails {
		changed = true
		// Forget hearing of MACs the host no longer lists.
		for i := range p.numRails {
			if !hasRail(h, p.rails[i].MAC) {
				delete(m.net.macs, p.rails[i].MAC)
			}
		}
	}
	p.name = name
	// A rail the host reports down carries no route to it from now on.
	for i := range int(h.NumRails) {
		if h.Rails[i].State&wire.RailUp == 0 {
			delete(m.net.macs, h.Rails[i].MAC)
		}
	}
	p.level, p.flags = h.Level, h.Flags
	if p.flags&wire.HostLeader != 0 {
		m.net.leaders[p.uid] = p
	} else {
		delete(m.net.leaders, p.uid)
	}
	p.numRails, p.rails = int(h.NumRails), h.Rails
	p.mapVersion, p.mapper, p.nodeID = h.MapVersion, h.MapperID, h.NodeID
	p.lastSeen, p.heardAt = now, now
	m.hear(rail, src, now)
	m.net.maxVersion = max(m.net.maxVersion, h.MapVersion)

	// The leader says whether the map we hold is fully configured.
	if h.Flags&wire.HostLeader != 0 && h.MapperID == h.UniqueID && h.UniqueID == m.cur.mapper {
		m.cur.leaderConfigured = h.Flags&wire.HostConfigured != 0 && h.MapVersion == m.cur.version && m.cur.m != nil
	}
	if p.level > 0 && !wasCandidate && better(p.level, p.uid, m.electedLevel, m.elected) {
		m.elect(now)
	}
	if changed {
		m.changed(now)
	}
	if newLeader && !m.leading() {
		m.nudge(now)
	}
	m.resendIfBehind(now, p)
	// A hello is answered by the mapper in charge, by the hosts that
	// broadcast their SCOUTs on that rail, and by those that send theirs
	// to the starting host (the mapper they will follow); the others let
	// their mapper in charge answer.
	if t == wire.TypeScout && h.Flags&wire.HostHello != 0 && m.self.railUp[rail] &&
		now-p.replied[rail] >= m.pass*3/2 && m.answersHello(rail, src, now) {
		p.replied[rail] = now
		var me wire.HostInfo
		m.selfInfo(now, &me)
		body, err := wire.AppendHostInfo(m.body[:0], &me)
		if err == nil {
			m.body = body
			m.send(rail, src, wire.TypeScoutReply, h.NodeID, 0, body)
		}
	}
}

func hasRail(h *wire.HostInfo, mac nodemap.MAC) bool {
	for i := range int(h.NumRails) {
		if h.Rails[i].MAC == mac {
			return true
		}
	}
	return false
}

// setRailUp records a link state change.
func (m *Mapper) setRailUp(rail int, up bool, now Time) {
	if rail < 0 || rail >= len(m.self.railUp) || m.self.railUp[rail] == up {
		return
	}
	m.self.railUp[rail] = up
	m.self.railHeard[rail] = never
	for _, h := range m.net.macs {
		h[rail] = never
	}
	if !m.self.started {
		return
	}
	// Tell the others soon, but not more than four times an interval.
	m.self.nextScout = min(m.self.nextScout, max(now, m.self.lastScout+m.interval/4))
	m.changed(now)
	m.refreshRoutes(now)
}

func sameMACs(p *peer, h *wire.HostInfo) bool {
	for i := range p.numRails {
		if p.rails[i].MAC != h.Rails[i].MAC {
			return false
		}
	}
	return true
}

// uidConflict is a unique id that two hosts use, seen from their SCOUTs.
type uidConflict struct {
	names []string
	last  Time
}

func (m *Mapper) conflict(uid nodemap.MAC, a, b string, now Time) {
	c := m.net.conflicts[uid]
	if c == nil {
		c = &uidConflict{}
		m.net.conflicts[uid] = c
	}
	for _, n := range []string{a, b} {
		if !slices.Contains(c.names, n) {
			c.names = append(c.names, n)
		}
	}
	c.last = now
}

// ownRails reports whether h lists exactly this host's interfaces.
func (m *Mapper) ownRails(h *wire.HostInfo) bool {
	if int(h.NumRails) != len(m.cfg.MACs) {
		return false
	}
	for i, mac := range m.cfg.MACs {
		if h.Rails[i].MAC != mac {
			return false
		}
	}
	return true
}
