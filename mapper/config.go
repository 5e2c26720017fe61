package mapper

import (
	"encoding/binary"
	"slices"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Distribution. The leader numbers each new map with a version above every
// version it used, installed or heard of (and above Config.VersionFloor),
// saves its state, installs the map itself and broadcasts the host table
// as CONFIG frames on every up rail, cut to fit the MTU. Every host that
// has all the frames of the version from the mapper it follows installs
// the map and answers with a unicast CONFIG_ACK; a repeated CONFIG of the
// version it holds is acknowledged again. The leader repeats the CONFIG
// frames every retry interval (unicast to each host missing when at most
// maxUnicastRetry are missing, broadcast otherwise), more slowly after
// fastRetries rounds, until every present host of the map acknowledged it:
// the network is then fully configured, which the leader's scouts say.

const (
	maxUnicastRetry = 4
	fastRetries     = 5
	maxHandTries    = 10
)

// leaderState is the distribution state while this host leads.
type leaderState struct {
	active     bool
	version    uint32
	content    []byte   // the entries of version, to notice changes
	bodies     [][]byte // CONFIG bodies of version
	need       map[nodemap.MAC]bool
	acked      int
	configured bool
	lastIssue  Time
	nextIssue  Time // when to look for changes (never: not pending)
	nextRetry  Time
	retries    int
	seq        uint32
	// waitFor is the mapper whose table a new leader waits for (zero:
	// none), until waitUntil.
	waitFor   nodemap.MAC
	waitUntil Time
	// holdUntil is when a mapper that took over from a running one has
	// heard every host's periodic SCOUT, so that its first map marks no
	// present host absent.
	holdUntil Time
	// announce: it has just begun to lead and sends its SCOUT at once.
	announce bool
	// outbid are the hosts of the map above whose other mapper's map
	// this leader made a new version, until they name its map (see
	// resendIfBehind).
	outbid map[nodemap.MAC]*outbid
}

// outbid is how often the leader made a new version above the map of
// another mapper that one host holds, and when it may do so again.
type outbid struct {
	n    int
	next Time
}

// maxOutbidBackoff bounds the wait between two versions made above the
// maps a host keeps taking from another mapper, in intervals.
const maxOutbidBackoff = 64

// assembly is a map being received in several CONFIG frames.
type assembly struct {
	mapper  nodemap.MAC
	version uint32
	total   int
	have    []bool
	n       int
	entries []entry
}

// handover is this host's table being handed to a new leader after this
// host stepped down.
type handover struct {
	to      nodemap.MAC
	version uint32
	tries   int
	next    Time
}

// installed is the map this host holds.
type installed struct {
	m                *nodemap.Map
	version          uint32
	mapper           nodemap.MAC
	self             nodemap.NodeID
	entries          []entry
	routes           []nodemap.Route
	leaderConfigured bool
	lastAck          Time
}

// changed asks the leader to look for changes soon.
func (m *Mapper) changed(now Time) {
	if m.lead.active {
		m.lead.nextIssue = min(m.lead.nextIssue, now)
		if m.lead.nextIssue == never {
			m.lead.nextIssue = now
		}
	}
}

func (m *Mapper) leaderTick(now Time) {
	if m.lead.nextIssue != never && now >= m.lead.nextIssue {
		if now < m.lead.holdUntil {
			m.lead.nextIssue = m.lead.holdUntil
			return
		}
		if m.lead.waitFor != (nodemap.MAC{}) && now < m.lead.waitUntil {
			m.lead.nextIssue = m.lead.waitUntil
			return
		}
		m.lead.waitFor = nodemap.MAC{}
		m.lead.nextIssue = never
		es, dups := m.desired(now)
		m.dups = dups
		key := contentKey(es)
		if m.cur.mapper != m.cfg.MACs[0] || m.lead.version == 0 || string(key) != string(m.lead.content) {
			if m.lead.lastIssue != never && now < m.lead.lastIssue+m.interval {
				m.lead.nextIssue = m.lead.lastIssue + m.interval
			} else {
				m.issue(now, es, key)
			}
		}
	}
	if m.lead.nextRetry != never && now >= m.lead.nextRetry {
		m.retryConfig(now)
	}
}

// contentKey encodes what a map says, to compare two maps.
func contentKey(es []entry) []byte {
	var b []byte
	for _, e := range es {
		b = binary.BigEndian.AppendUint32(b, uint32(e.id))
		b = append(b, byte(e.flags), e.up, byte(len(e.macs)), byte(len(e.name)))
		for i, mac := range e.macs {
			b = append(b, mac[:]...)
			b = append(b, e.seen[i])
		}
		b = append(b, e.name...)
	}
	return b
}

// issue makes es the new map.
func (m *Mapper) issue(now Time, es []entry, key []byte) {
	v := max(m.cfg.VersionFloor, m.lastVersion, m.net.maxVersion, m.cur.version) + 1
	if v == 0 { // 2^32 versions used: wrap is not allowed
		return
	}
	m.lastVersion = v
	m.out.SaveState(m.tbl.state(v), true)
	self := m.cfg.MACs[0]
	l := &m.lead
	l.version, l.content, l.lastIssue = v, key, now
	l.bodies = m.configBodies(0, v, es)
	l.need = map[nodemap.MAC]bool{}
	for i := range es {
		if !es[i].absent() && es[i].macs[0] != self {
			l.need[es[i].macs[0]] = false
		}
	}
	l.acked, l.configured, l.retries = 0, len(l.need) == 0, 0
	m.counters.Remaps++
	if !m.install(now, v, self, es) {
		l.nextRetry = never
		return // cannot happen: desired keeps names and MACs unique
	}
	m.broadcastConfig()
	l.nextRetry = now + m.configRetry
	if l.configured {
		l.nextRetry = never
	}
}

// resendIfBehind makes the leader send its map again to a host of the map
// whose SCOUT names another map: a host whose mapper restarted (its
// earlier acknowledgement is void), or one that missed the map. The
// network is not fully configured until it acknowledges again. A host
// that holds a map of another mapper at least as new as ours (one that
// took over while this host was too slow to run, or that mapped at the
// same time) would drop ours as stale: the leader makes a new version,
// above every version heard.
//
// A host that keeps taking another mapper's maps after that follows that
// mapper: it hears both and ranks the other higher, which this leader
// cannot hear, or this leader's frames do not reach it (a one-way link).
// Each new version of one mapper would then make the other outbid it,
// each interval, forever. So the leader outbids one host's maps again
// only after a wait that doubles each time (1, 2, 4 ... 64 intervals)
// until the host names this leader's map.
func (m *Mapper) resendIfBehind(now Time, p *peer) {
	l := &m.lead
	if !l.active || l.version == 0 {
		return
	}
	if p.mapVersion == l.version && p.mapper == m.cfg.MACs[0] {
		delete(l.outbid, p.uid)
		return
	}
	done, ok := l.need[p.uid]
	if ok && p.mapVersion >= l.version && p.mapper != m.cfg.MACs[0] {
		if done {
			l.need[p.uid] = false
			l.acked--
			l.configured = false
		}
		o := l.outbid[p.uid]
		if o == nil {
			o = &outbid{next: never}
			if l.outbid == nil {
				l.outbid = map[nodemap.MAC]*outbid{}
			}
			l.outbid[p.uid] = o
		}
		if o.next != never && now < o.next {
			return
		}
		o.next = now + m.interval*Time(min(1<<o.n, maxOutbidBackoff))
		o.n++
		l.content = nil
		m.changed(now)
		return
	}
	if !ok || (!done && l.nextRetry != never) {
		return
	}
	if done {
		l.need[p.uid] = false
		l.acked--
		l.configured = false
	}
	l.retries = 0
	if l.nextRetry == never || l.nextRetry > now+m.pass {
		l.nextRetry = now + m.pass
	}
}

// configBodies cuts es into CONFIG bodies that fit the MTU.
func (m *Mapper) configBodies(flags wire.ConfigFlags, v uint32, es []entry) [][]byte {
	maxBody := m.cfg.MTU - wire.HeaderLen
	h := wire.ConfigHeader{Flags: flags, MapVersion: v, MapperID: m.cfg.MACs[0], TotalHosts: uint16(len(es))}
	var bodies [][]byte
	var batch []wire.ConfigEntry
	size := wire.ConfigLen
	flush := func(next int) {
		b, err := wire.AppendConfig(nil, &h, batch)
		if err == nil {
			bodies = append(bodies, b)
		}
		h.First = uint16(next)
		batch, size = batch[:0], wire.ConfigLen
	}
	for i := range es {
		we := es[i].wire()
		if len(batch) > 0 && size+we.EncodedLen() > maxBody {
			flush(i)
		}
		batch = append(batch, we)
		size += we.EncodedLen()
	}
	if len(batch) > 0 || len(bodies) == 0 {
		flush(len(es))
	}
	return bodies
}

func (e *entry) wire() wire.ConfigEntry {
	we := wire.ConfigEntry{NodeID: uint32(e.id), Flags: e.flags, UniqueID: e.macs[0],
		NumRails: uint8(len(e.macs)), UpMask: e.up, Seen: e.seen, Name: []byte(e.name)}
	copy(we.MACs[:], e.macs)
	return we
}

func (m *Mapper) broadcastConfig() {
	m.lead.seq++
	for r, up := range m.self.railUp {
		if !up {
			continue
		}
		for _, b := range m.lead.bodies {
			m.send(r, wire.Broadcast, wire.TypeConfig, 0, m.lead.seq, b)
		}
	}
}

func (m *Mapper) retryConfig(now Time) {
	l := &m.lead
	var missing []nodemap.MAC
	for uid, ok := range l.need {
		if !ok {
			missing = append(missing, uid)
		}
	}
	if len(missing) == 0 {
		l.nextRetry = never
		return
	}
	l.retries++
	m.counters.ConfigRetries++
	if len(missing) <= maxUnicastRetry {
		slices.SortFunc(missing, func(a, b nodemap.MAC) int { return compareMAC(a, b) })
		l.seq++
		for _, uid := range missing {
			rail, dst, ok := m.routeTo(uid, now)
			if !ok {
				continue
			}
			var tnode uint32
			if e, ok := m.cur.m.ByMAC(uid); ok {
				tnode = uint32(e.ID)
			}
			for _, b := range l.bodies {
				m.send(rail, dst, wire.TypeConfig, tnode, l.seq, b)
			}
		}
	} else {
		m.broadcastConfig()
	}
	if l.retries < fastRetries {
		l.nextRetry = now + m.configRetry
	} else {
		l.nextRetry = now + m.interval
	}
}

func compareMAC(a, b nodemap.MAC) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// routeTo picks a local rail and a MAC of peer uid heard on it, preferring
// the same rail number and the freshest.
func (m *Mapper) routeTo(uid nodemap.MAC, now Time) (int, nodemap.MAC, bool) {
	p := m.net.peers[uid]
	if p == nil {
		return 0, nodemap.MAC{}, false
	}
	for r, up := range m.self.railUp {
		if !up {
			continue
		}
		if i, ok := m.pick(p.macs(), r, now); ok {
			return r, p.rails[i].MAC, true
		}
	}
	return 0, nodemap.MAC{}, false
}

// fromPeer checks that a frame naming the host id came from src, one of
// that known peer's MACs, and notes that rail heard src. Otherwise it
// counts the drop: DropSelf for our own frame heard back, ownElse for a
// frame naming this host from a MAC not ours, DropUnknown for a host not
// heard yet, DropForged for a MAC not the host's.
func (m *Mapper) fromPeer(now Time, rail int, id, src nodemap.MAC, ownElse string) bool {
	if id == m.cfg.MACs[0] {
		if slices.Contains(m.cfg.MACs, src) {
			m.drop(DropSelf)
		} else {
			m.drop(ownElse)
		}
		return false
	}
	p := m.net.peers[id]
	if p == nil {
		m.drop(DropUnknown)
		return false
	}
	if !slices.Contains(p.macs(), src) {
		m.drop(DropForged)
		return false
	}
	m.hear(rail, src, now)
	return true
}

// onConfig handles a CONFIG frame.
func (m *Mapper) onConfig(now Time, rail int, src nodemap.MAC, c *wire.Config) {
	if !m.fromPeer(now, rail, c.MapperID, src, DropStale) {
		return
	}
	// A version in use, even in a map this host drops: a map it makes
	// must be newer.
	m.net.maxVersion = max(m.net.maxVersion, c.MapVersion)
	if c.Flags&wire.ConfigTable != 0 {
		m.onTable(now, rail, src, c)
		return
	}
	if c.MapperID != m.elected || m.leading() {
		m.drop(DropStale)
		return
	}
	if c.MapVersion <= m.cur.version {
		if c.MapVersion == m.cur.version && c.MapperID == m.cur.mapper && now-m.cur.lastAck >= m.configRetry/2 {
			m.sendAck(now, rail, src, 0, m.cur.version)
			return
		}
		m.drop(DropStale)
		return
	}
	a := &m.asm
	if a.mapper != c.MapperID || a.version != c.MapVersion || a.total != int(c.TotalHosts) {
		if a.mapper == c.MapperID && c.MapVersion < a.version {
			m.drop(DropStale)
			return
		}
		*a = assembly{mapper: c.MapperID, version: c.MapVersion, total: int(c.TotalHosts),
			have: make([]bool, c.TotalHosts), entries: make([]entry, c.TotalHosts)}
	}
	for i, we := range c.All() {
		if a.have[i] {
			continue
		}
		a.have[i] = true
		a.n++
		a.entries[i] = fromWire(&we)
	}
	if a.n < a.total {
		return
	}
	es := a.entries
	*a = assembly{}
	if !validEntries(es) {
		m.drop(DropMap)
		return
	}
	if m.install(now, c.MapVersion, c.MapperID, es) {
		m.sendAck(now, rail, src, 0, c.MapVersion)
	}
}

func fromWire(we *wire.ConfigEntry) entry {
	e := entry{id: nodemap.NodeID(we.NodeID), flags: we.Flags, name: string(we.Name), up: we.UpMask,
		seen: we.Seen, macs: make([]nodemap.MAC, we.NumRails)}
	copy(e.macs, we.MACs[:we.NumRails])
	return e
}

// validEntries checks that ids and unique ids of a received table do not
// repeat and that ids are in range.
func validEntries(es []entry) bool {
	ids := make(map[nodemap.NodeID]bool, len(es))
	uids := make(map[nodemap.MAC]bool, len(es))
	for i := range es {
		e := &es[i]
		if e.id == 0 || e.id > nodemap.MaxNodeID || ids[e.id] || uids[e.macs[0]] {
			return false
		}
		ids[e.id], uids[e.macs[0]] = true, true
	}
	return true
}

func (m *Mapper) sendAck(now Time, rail int, dst nodemap.MAC, flags wire.ConfigFlags, v uint32) {
	a := wire.ConfigAck{Flags: flags, MapVersion: v, UniqueID: m.cfg.MACs[0], NodeID: uint32(m.cur.self)}
	m.body = wire.AppendConfigAck(m.body[:0], &a)
	var tnode uint32
	if p := m.net.peers[m.elected]; p != nil {
		tnode = p.nodeID
	}
	m.send(rail, dst, wire.TypeConfigAck, tnode, 0, m.body)
	if flags == 0 {
		m.cur.lastAck = now
	}
}

// onConfigAck handles a CONFIG_ACK frame.
func (m *Mapper) onConfigAck(now Time, rail int, src nodemap.MAC, a *wire.ConfigAck) {
	if !m.fromPeer(now, rail, a.UniqueID, src, DropForged) {
		return
	}
	if a.Flags&wire.ConfigTable != 0 {
		if m.hand.next != never && a.UniqueID == m.hand.to && a.MapVersion == m.hand.version {
			m.hand = handover{next: never}
			return
		}
		m.drop(DropStale)
		return
	}
	l := &m.lead
	if !l.active || a.MapVersion != l.version {
		m.drop(DropStale)
		return
	}
	done, ok := l.need[a.UniqueID]
	if !ok || done {
		return
	}
	l.need[a.UniqueID] = true
	l.acked++
	if l.acked == len(l.need) {
		l.configured = true
		l.nextRetry = never
		// Tell the followers soon.
		m.self.nextScout = min(m.self.nextScout, max(now, m.self.lastScout+m.interval/4))
	}
}

// onTable merges a table handed over by a mapper that stepped down. A
// starting host that will lead takes it too, so that its first map keeps
// the ids of the hosts that are absent now.
func (m *Mapper) onTable(now Time, rail int, src nodemap.MAC, c *wire.Config) {
	if m.elected != m.cfg.MACs[0] {
		m.drop(DropStale)
		return
	}
	for _, we := range c.All() {
		e := fromWire(&we)
		if e.id == 0 || len(e.macs) == 0 || !nodemap.ValidHostName(e.name) {
			continue
		}
		m.tbl.claim(e.macs[0], e.name, e.macs, e.id)
	}
	m.sendAck(now, rail, src, wire.ConfigTable, c.MapVersion)
	if c.MapperID == m.lead.waitFor && int(c.First)+int(c.Count) == int(c.TotalHosts) {
		m.lead.waitFor = nodemap.MAC{}
	}
	m.changed(now)
}

// handTick sends this host's table to the new leader.
func (m *Mapper) handTick(now Time) {
	h := &m.hand
	if h.tries >= maxHandTries {
		*h = handover{next: never}
		return
	}
	h.tries++
	h.next = now + m.retry
	rail, dst, ok := m.routeTo(h.to, now)
	if !ok {
		return
	}
	es := make([]entry, len(m.tbl.recs))
	for i, r := range m.tbl.recs {
		es[i] = entry{id: r.id, name: r.name, macs: r.macs}
		if r.absent {
			es[i].flags = wire.EntryAbsent
		}
	}
	for _, b := range m.configBodies(wire.ConfigTable, h.version, es) {
		m.send(rail, dst, wire.TypeConfig, 0, 0, b)
	}
}

// install makes es (version v by mapper) this host's map. It reports
// whether the map was consistent and installed.
func (m *Mapper) install(now Time, v uint32, mapper nodemap.MAC, es []entry) bool {
	self := nodemap.NoSuchNodeID
	for i := range es {
		if es[i].macs[0] == m.cfg.MACs[0] && !es[i].absent() {
			self = es[i].id
		}
	}
	routes := m.routes(es, mapper, now)
	nm, err := buildMap(v, mapper, es, routes)
	if err != nil {
		m.drop(DropMap)
		return false
	}
	m.cur = installed{m: nm, version: v, mapper: mapper, self: self, entries: es, routes: routes, lastAck: never}
	if mapper != m.cfg.MACs[0] {
		m.tbl.replace(es)
		m.lastVersion = max(m.lastVersion, v)
		m.out.SaveState(m.tbl.state(m.lastVersion), false)
	}
	m.counters.MapsInstalled++
	m.out.InstallMap(nm)
	return true
}
