package mapper

import (
	"slices"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Routes. Each host computes its own routes from what it hears: a route to
// a host of the map is (local interface, peer interface) for every up
// local rail on which one of the peer's MACs was heard within the liveness
// window (MissedIntervals verification intervals and a half). On each
// local rail the peer's MAC of the same rail number is preferred, else its
// lowest rail heard there, so one bridge, two rails on two bridges, crossed
// rails and hosts with fewer rails all get the routes their wiring allows.
// Absent hosts get none. When only the routes change, the map is installed
// again with the same version.

// pickRail is pick for the interfaces of peer p, without allocating.
func (m *Mapper) pickRail(p *peer, r int, now Time) (int, bool) {
	return preferRail(int(p.numRails), r, func(i int) bool {
		h := m.net.macs[p.rails[i].MAC]
		return h != nil && m.alive(h[r], now)
	})
}

// pickSeen returns the index of the MAC of e to use on a local rail that
// the mapper hears on its rails mask: a MAC the mapper hears on one of
// them is on the same segment. The same rail number is preferred, else
// the lowest.
func pickSeen(e *entry, r int, mask uint8) (int, bool) {
	return preferRail(len(e.macs), r, func(i int) bool { return e.seen[i]&mask != 0 })
}

// pick returns the index in macs of the MAC to use on local rail r.
func (m *Mapper) pick(macs []nodemap.MAC, r int, now Time) (int, bool) {
	return preferRail(len(macs), r, func(i int) bool {
		h := m.net.macs[macs[i]]
		return h != nil && m.alive(h[r], now)
	})
}

// preferRail returns i = r if usable(r), else the lowest usable i below n
// (a host's interfaces are numbered like the local rails: the same number
// is the same segment where cabling is straight).
func preferRail(n, r int, usable func(i int) bool) (int, bool) {
	if r >= 0 && r < n && usable(r) {
		return r, true
	}
	for i := range n {
		if usable(i) {
			return i, true
		}
	}
	return -1, false
}

// routes computes this host's routes to the hosts of es, a map made by
// mapper. A follower hears only the mapper in charge (scout.go): on a
// local rail the mapper hears, the map says which peer MACs share its
// segment (wire.ConfigEntry.Seen); on a rail the mapper does not hear,
// the hosts there broadcast their SCOUTs and the routes are the MACs
// heard. The mapper itself hears every host.
func (m *Mapper) routes(es []entry, mapper nodemap.MAC, now Time) []nodemap.Route {
	var rs []nodemap.Route
	self := m.cfg.MACs[0]
	// seg[r]: the mapper's rails on the segment of local rail r, from
	// this host's entry (the mapper's rails that hear it) and from the
	// mapper's interfaces this host hears on r.
	var seg [wire.MaxRails]uint8
	if mapper != self {
		for k := range es {
			e := &es[k]
			switch {
			case e.absent():
			case e.macs[0] == self:
				for r := range min(len(e.macs), len(m.self.railUp)) {
					seg[r] |= e.seen[r]
				}
			case e.macs[0] == mapper:
				for i, mac := range e.macs {
					if h := m.net.macs[mac]; h != nil {
						for r := range m.self.railUp {
							if m.alive(h[r], now) {
								seg[r] |= e.seen[i]
							}
						}
					}
				}
			}
		}
	}
	for k := range es {
		e := &es[k]
		if e.absent() || e.macs[0] == self {
			continue
		}
		for r, up := range m.self.railUp {
			if !up {
				continue
			}
			if seg[r] != 0 {
				if i, ok := pickSeen(e, r, seg[r]); ok {
					rs = append(rs, nodemap.Route{Node: e.id, Local: m.cfg.MACs[r], Peer: e.macs[i]})
				}
				continue
			}
			if i, ok := m.pick(e.macs, r, now); ok {
				rs = append(rs, nodemap.Route{Node: e.id, Local: m.cfg.MACs[r], Peer: e.macs[i]})
			}
		}
	}
	return rs
}

// buildMap makes the node map of es. Absent hosts whose name or MACs a
// present host now holds are left out (their ids stay reserved in the
// hosts table).
func buildMap(v uint32, mapper nodemap.MAC, es []entry, routes []nodemap.Route) (*nodemap.Map, error) {
	names := map[string]bool{}
	macs := map[nodemap.MAC]bool{}
	for i := range es {
		if !es[i].absent() {
			names[es[i].name] = true
			for _, mac := range es[i].macs {
				macs[mac] = true
			}
		}
	}
	ns := make([]nodemap.Entry, 0, len(es))
	for i := range es {
		e := &es[i]
		if e.absent() {
			if names[e.name] || !nodemap.ValidHostName(e.name) || slices.ContainsFunc(e.macs, func(mac nodemap.MAC) bool { return macs[mac] }) {
				continue
			}
			names[e.name] = true
			for _, mac := range e.macs {
				macs[mac] = true
			}
		}
		ns = append(ns, nodemap.Entry{ID: e.id, Host: e.name, MACs: e.macs})
	}
	return nodemap.New(v, mapper, ns, routes)
}

// refreshRoutes installs the current map again if this host's routes
// changed.
func (m *Mapper) refreshRoutes(now Time) {
	if m.cur.m == nil {
		return
	}
	rs := m.routes(m.cur.entries, m.cur.mapper, now)
	if slices.Equal(rs, m.cur.routes) {
		return
	}
	nm, err := buildMap(m.cur.version, m.cur.mapper, m.cur.entries, rs)
	if err != nil {
		return
	}
	m.cur.m, m.cur.routes = nm, rs
	m.counters.MapsInstalled++
	m.out.InstallMap(nm)
}
