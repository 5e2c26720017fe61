package mapper

import (
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Election: the mapper in charge is the host with the highest (level,
// unique id) among this host (if its level is not 0) and the peers with a
// nonzero level heard within the liveness window (MissedIntervals
// verification intervals and a half). Every host runs the same rule on what
// it hears, so hosts that hear the same peers agree. A starting host is a
// candidate at once (its HELLO scouts carry its level), but leads only
// after its startup passes, when it knows the map versions and node ids in
// use.

// better reports whether (la, a) ranks above (lb, b).
func better(la uint8, a nodemap.MAC, lb uint8, b nodemap.MAC) bool {
	if la != lb {
		return la > lb
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// elect recomputes the mapper in charge and starts or stops leading.
func (m *Mapper) elect(now Time) {
	var best nodemap.MAC
	var bestLevel uint8
	self := m.cfg.MACs[0]
	if m.cfg.Level > 0 {
		best, bestLevel = self, m.cfg.Level
	}
	for _, p := range m.net.peers {
		if p.level > 0 && m.peerAlive(p, now) && better(p.level, p.uid, bestLevel, best) {
			best, bestLevel = p.uid, p.level
		}
	}
	m.electedLevel = bestLevel
	if best != m.elected {
		prev := m.elected
		if prev != self && prev != (nodemap.MAC{}) && !m.self.starting && !m.searching() {
			if p := m.net.peers[prev]; p == nil || !m.peerAlive(p, now) {
				// The mapper this host followed went silent. Its
				// followers sent their SCOUTs to it alone, so this host
				// has heard none of them lately: it broadcasts its
				// SCOUTs, at once, and hears theirs (they all notice
				// within an interval) before it may lead.
				m.self.searchUntil = now + m.interval + m.pass
				m.self.nextScout = min(m.self.nextScout, now)
			}
		}
		m.elected = best
		m.counters.LeaderChanges++
		// A map being received from another mapper is dropped.
		if m.asm.mapper != best {
			m.asm = assembly{}
		}
	}
	if m.searching() && best != self {
		if p := m.net.peers[best]; p != nil && p.flags&wire.HostLeader != 0 {
			// A mapper in charge is heard again: follow it.
			m.self.searchUntil = never
		}
	}
	switch {
	case m.elected == self && !m.self.starting && !m.searching() && !m.lead.active:
		m.becomeLeader(now)
	case m.elected != self && m.lead.active:
		m.stepDown(now)
	}
}

// leading reports whether this host is the mapper in charge.
func (m *Mapper) leading() bool { return m.lead.active }

// configured reports whether the installed map is fully configured: as the
// leader, every present host acknowledged it; as a follower, the leader's
// scouts say so.
func (m *Mapper) configured() bool {
	if m.cur.m == nil {
		return false
	}
	if m.leading() {
		return m.lead.configured && m.cur.version == m.lead.version && m.cur.mapper == m.cfg.MACs[0]
	}
	return m.cur.leaderConfigured && m.cur.mapper == m.elected
}

// settled reports whether this host waits on no prompt answer: it made its
// startup passes, is not searching for a mapper in charge, hands no table
// over, and holds a configured map: as the mapper in charge, every host
// acknowledged it and no change waits to be mapped; as a follower, its
// mapper in charge says so.
func (m *Mapper) settled() bool {
	if !m.self.started || m.self.starting || m.searching() || m.hand.next != never || !m.configured() {
		return false
	}
	if m.leading() {
		return m.lead.nextRetry == never && m.lead.nextIssue == never && m.lead.waitFor == (nodemap.MAC{})
	}
	// A newer map of its mapper in charge, partly received.
	return m.asm.mapper != m.elected || m.asm.version <= m.cur.version
}

// RecvDelay is how long a received frame may wait before Input: a driver
// that polls its rings reads them at least this often. It is a startup
// pass while this host is the mapper in charge and not settled (it waits
// for acknowledgements, hand-overs and changes: the sooner it reads them,
// the fewer CONFIG retries it sends), and half a verification interval
// otherwise: a scout can wait that long, and a CONFIG acknowledged late
// is sent again. Followers never hurry: when the mapper in charge stops,
// all of them search at once, and drivers that read faster then would
// load every host when the cluster is slowest. Every wake-up of an idle
// daemon costs its host far more than the frames it reads.
func (m *Mapper) RecvDelay() Time {
	if m.leading() && !m.settled() {
		return m.pass
	}
	return m.interval / 2
}

func (m *Mapper) becomeLeader(now Time) {
	m.lead = leaderState{active: true, nextIssue: now, nextRetry: never, lastIssue: never, holdUntil: never, announce: true}
	m.hand = handover{next: never}
	// Hosts that other mappers numbered keep their ids where free.
	for _, p := range m.net.peers {
		if m.peerAlive(p, now) && p.nodeID != 0 {
			m.tbl.claim(p.uid, p.name, p.macs(), nodemap.NodeID(p.nodeID))
		}
	}
	// A mapper still alive whose map is newer than ours is stepping down
	// and hands its table over: wait for it (at most an interval) so that
	// the first map keeps the ids of the hosts absent now.
	if p := m.net.peers[m.newestMapper(now)]; p != nil && p.uid != m.cfg.MACs[0] && m.peerAlive(p, now) {
		m.lead.waitFor, m.lead.waitUntil = p.uid, now+m.interval
	}
	// A host that just started and takes over a running network (a map
	// exists), or heard nobody at all (alone, or every hello reply was
	// lost), makes its first map only once it has heard every host's
	// periodic SCOUT: one interval and a half after its start. Hosts that
	// start together (all in their startup passes) map at once.
	hold := true
	for _, p := range m.net.peers {
		if !m.peerAlive(p, now) {
			continue
		}
		if p.mapVersion != 0 {
			hold = true
			break
		}
		hold = false
	}
	if hold {
		// The followers of another mapper send their SCOUTs to it
		// alone: they send one here within a startup pass of hearing
		// this host's first SCOUT as mapper in charge (nudge).
		m.lead.holdUntil = max(m.self.startAt+m.interval+m.interval/2, now+2*m.pass)
	}
}

// newestMapper returns the mapper of the newest map the alive peers hold.
func (m *Mapper) newestMapper(now Time) nodemap.MAC {
	var best nodemap.MAC
	var v uint32
	for _, p := range m.net.peers {
		if m.peerAlive(p, now) && p.mapVersion > v {
			best, v = p.mapper, p.mapVersion
		}
	}
	if v <= m.cur.version {
		return nodemap.MAC{}
	}
	return best
}

func (m *Mapper) stepDown(now Time) {
	m.lead = leaderState{nextIssue: never, nextRetry: never}
	if m.elected != (nodemap.MAC{}) && len(m.tbl.recs) > 0 {
		m.hand = handover{to: m.elected, next: now, version: m.lastVersion}
	}
}

// macs returns the peer's interfaces in rail order.
func (p *peer) macs() []nodemap.MAC {
	ms := make([]nodemap.MAC, p.numRails)
	for i := range ms {
		ms[i] = p.rails[i].MAC
	}
	return ms
}
