package mapper

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// State is what a mapper persists across restarts (GM-1's hosts file plus
// the last map version): every host ever mapped with its node id, and the
// highest map version used or seen.
type State struct {
	// LastVersion is the highest map version this host used or installed.
	LastVersion uint32
	// Hosts is the hosts table in node id order.
	Hosts []HostRecord
}

// HostRecord is one host of the hosts table.
type HostRecord struct {
	// ID is the host's node id, never reused for another host.
	ID nodemap.NodeID
	// Name is the host name.
	Name string
	// UniqueID is the host's unique id (MACs[0]).
	UniqueID nodemap.MAC
	// MACs are the host's interfaces in rail order.
	MACs []nodemap.MAC
	// Absent is true for a host that has left: its id stays reserved.
	Absent bool
}

// Marshal returns s as a hosts file, the text ParseState reads:
//
//	# comment
//	version <last map version>
//	<node id> <host name> <mac>[,<mac>...] present|absent
//
// one line per host, in node id order.
func (s State) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("# EtherGM mapper state: hosts file (node-id host-name mac[,mac...] present|absent)\n")
	fmt.Fprintf(&b, "version %d\n", s.LastVersion)
	hosts := slices.Clone(s.Hosts)
	slices.SortFunc(hosts, func(a, b HostRecord) int { return cmp.Compare(a.ID, b.ID) })
	for _, h := range hosts {
		macs := h.MACs
		if len(macs) == 0 {
			macs = []nodemap.MAC{h.UniqueID}
		}
		ms := make([]string, len(macs))
		for i, mac := range macs {
			ms[i] = nodemap.FormatMAC(mac)
		}
		st := "present"
		if h.Absent {
			st = "absent"
		}
		fmt.Fprintf(&b, "%d %s %s %s\n", h.ID, h.Name, strings.Join(ms, ","), st)
	}
	return b.Bytes()
}

// ErrState is wrapped by the errors of ParseState.
var ErrState = errors.New("mapper: malformed state file")

// ParseState parses a hosts file written by State.Marshal. Node ids and
// unique ids must not repeat (other MACs may: an absent host's interface
// may have moved to another host).
func ParseState(data []byte) (State, error) {
	var s State
	ids := map[nodemap.NodeID]bool{}
	uids := map[nodemap.MAC]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, args ...any) (State, error) {
			return State{}, fmt.Errorf("%w: line %d: %s", ErrState, i+1, fmt.Sprintf(format, args...))
		}
		if f[0] == "version" {
			if len(f) != 2 {
				return bad("want \"version <n>\"")
			}
			v, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				return bad("bad version %q", f[1])
			}
			s.LastVersion = uint32(v)
			continue
		}
		if len(f) != 4 || (f[3] != "present" && f[3] != "absent") {
			return bad("want \"node-id host-name mac[,mac...] present|absent\"")
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 || nodemap.NodeID(id) > nodemap.MaxNodeID {
			return bad("bad node id %q", f[0])
		}
		if ids[nodemap.NodeID(id)] {
			return bad("node id %d listed twice", id)
		}
		ids[nodemap.NodeID(id)] = true
		if !nodemap.ValidHostName(f[1]) {
			return bad("bad host name %q", f[1])
		}
		h := HostRecord{ID: nodemap.NodeID(id), Name: f[1], Absent: f[3] == "absent"}
		for _, ms := range strings.Split(f[2], ",") {
			mac, err := nodemap.ParseMAC(ms)
			if err != nil {
				return bad("bad MAC address %q", ms)
			}
			h.MACs = append(h.MACs, mac)
		}
		if len(h.MACs) > nodemap.MaxRails {
			return bad("%d MAC addresses (at most %d)", len(h.MACs), nodemap.MaxRails)
		}
		h.UniqueID = h.MACs[0]
		if uids[h.UniqueID] {
			return bad("unique id %s listed twice", nodemap.FormatMAC(h.UniqueID))
		}
		uids[h.UniqueID] = true
		s.Hosts = append(s.Hosts, h)
	}
	return s, nil
}

// record is one host of the table.
type record struct {
	id     nodemap.NodeID
	name   string
	uid    nodemap.MAC
	macs   []nodemap.MAC
	absent bool
}

// table is the hosts table: every host ever mapped, by node id. Ids are
// never reused: a new host gets the largest id so far plus one, or the id
// it claims (from another mapper's map) if that id is free.
type table struct {
	recs  []*record // sorted by id
	byUID map[nodemap.MAC]*record
	byID  map[nodemap.NodeID]*record
}

func (t *table) reset() {
	t.recs = nil
	t.byUID = make(map[nodemap.MAC]*record)
	t.byID = make(map[nodemap.NodeID]*record)
}

// load fills the table from persisted records, skipping inconsistent ones.
func (t *table) load(hs []HostRecord) {
	t.reset()
	for _, h := range hs {
		macs := h.MACs
		if len(macs) == 0 {
			macs = []nodemap.MAC{h.UniqueID}
		}
		if h.ID == 0 || h.ID > nodemap.MaxNodeID || t.byID[h.ID] != nil || t.byUID[macs[0]] != nil ||
			len(macs) > nodemap.MaxRails || !nodemap.ValidHostName(h.Name) {
			continue
		}
		t.insert(&record{id: h.ID, name: h.Name, uid: macs[0], macs: slices.Clone(macs), absent: h.Absent})
	}
}

func (t *table) insert(r *record) {
	t.byUID[r.uid] = r
	t.byID[r.id] = r
	i, _ := slices.BinarySearchFunc(t.recs, r.id, func(x *record, id nodemap.NodeID) int { return cmp.Compare(x.id, id) })
	t.recs = slices.Insert(t.recs, i, r)
}

// nextID returns the id a new host gets: one more than the largest so far.
func (t *table) nextID() nodemap.NodeID {
	if len(t.recs) == 0 {
		return 1
	}
	return t.recs[len(t.recs)-1].id + 1
}

// add adds a host unknown to the table, with id want if it is free and
// valid, else nextID. It returns nil if the ids are exhausted.
func (t *table) add(uid nodemap.MAC, name string, macs []nodemap.MAC, want nodemap.NodeID) *record {
	id := want
	if id == 0 || id > nodemap.MaxNodeID || t.byID[id] != nil {
		id = t.nextID()
	}
	if id > nodemap.MaxNodeID {
		return nil
	}
	r := &record{id: id, name: name, uid: uid, macs: slices.Clone(macs)}
	t.insert(r)
	return r
}

// claim adds a host unknown to the table with the id it holds from
// another mapper, if that id is free; hosts already known keep their ids.
func (t *table) claim(uid nodemap.MAC, name string, macs []nodemap.MAC, id nodemap.NodeID) {
	if t.byUID[uid] != nil || id == 0 || id > nodemap.MaxNodeID || t.byID[id] != nil {
		return
	}
	t.insert(&record{id: id, name: name, uid: uid, macs: slices.Clone(macs), absent: true})
}

// replace makes the table that of an installed map.
func (t *table) replace(es []entry) {
	t.reset()
	for _, e := range es {
		if e.id == 0 || t.byID[e.id] != nil || t.byUID[e.macs[0]] != nil {
			continue
		}
		t.insert(&record{id: e.id, name: e.name, uid: e.macs[0], macs: slices.Clone(e.macs), absent: e.flags&wire.EntryAbsent != 0})
	}
}

// rename moves the id of an absent host to a new unique id: a host that
// came back with another first interface keeps its id by its name.
func (t *table) rename(r *record, uid nodemap.MAC) {
	delete(t.byUID, r.uid)
	r.uid = uid
	t.byUID[uid] = r
}

// state returns the table as persisted state.
func (t *table) state(last uint32) State {
	s := State{LastVersion: last, Hosts: make([]HostRecord, len(t.recs))}
	for i, r := range t.recs {
		s.Hosts[i] = HostRecord{ID: r.id, Name: r.name, UniqueID: r.uid, MACs: slices.Clone(r.macs), Absent: r.absent}
	}
	return s
}

// entry is one host of a map, as CONFIG carries it.
type entry struct {
	id    nodemap.NodeID
	flags wire.EntryFlags
	name  string
	macs  []nodemap.MAC
	up    uint8
	seen  [wire.MaxRails]uint8 // per MAC: the mapper's rails that hear it
}

func (e *entry) absent() bool { return e.flags&wire.EntryAbsent != 0 }

// view is a present host as the leader sees it.
type view struct {
	uid     nodemap.MAC
	name    string
	macs    []nodemap.MAC
	up      uint8
	seen    [wire.MaxRails]uint8
	claimed nodemap.NodeID
}

// present returns this host and the peers heard recently.
func (m *Mapper) present(now Time) []view {
	self := view{uid: m.cfg.MACs[0], name: m.cfg.Host, macs: m.cfg.MACs}
	for r := range m.cfg.MACs {
		if m.self.railUp[r] {
			self.seen[r] = 1 << r
			if m.alive(m.self.railHeard[r], now) {
				self.up |= 1 << r
			}
		}
	}
	vs := []view{self}
	for _, p := range m.net.peers {
		if !m.peerAlive(p, now) {
			continue
		}
		v := view{uid: p.uid, name: p.name, macs: p.macs(), claimed: nodemap.NodeID(p.nodeID)}
		// A host in its startup passes has had no time to hear anyone:
		// its rails count by their link state. Otherwise a mapper
		// restarted at once would make a new version as it starts and
		// another when it has heard its peers.
		hearing := wire.RailUp | wire.RailHearing
		if p.flags&wire.HostHello != 0 {
			hearing = wire.RailUp
		}
		for i := range p.numRails {
			if p.rails[i].State&hearing == hearing {
				v.up |= 1 << i
			}
			if h := m.net.macs[p.rails[i].MAC]; h != nil {
				for r, up := range m.self.railUp {
					if up && m.alive(h[r], now) {
						v.seen[i] |= 1 << r
					}
				}
			}
		}
		vs = append(vs, v)
	}
	return vs
}

// resolve orders the present hosts vs (hosts already in the table first,
// by id, then new ones by unique id, so a newcomer never displaces a known
// host) and leaves out those claiming a name or MAC that an earlier one
// holds: it returns the hosts kept, in order, and the duplicates. It does
// not change the table.
func (t *table) resolve(vs []view) ([]*view, []Duplicate) {
	rank := func(v *view) (bool, nodemap.NodeID) {
		if r := t.byUID[v.uid]; r != nil {
			return true, r.id
		}
		return false, 0
	}
	slices.SortFunc(vs, func(a, b view) int {
		ka, ia := rank(&a)
		kb, ib := rank(&b)
		if ka != kb {
			if ka {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(ia, ib); c != 0 {
			return c
		}
		return bytes.Compare(a.uid[:], b.uid[:])
	})
	nameOf := make(map[string]nodemap.MAC, len(vs))
	macOf := make(map[nodemap.MAC]nodemap.MAC, len(vs))
	dups := map[string]*Duplicate{}
	dup := func(kind, value string, holder, claimant nodemap.MAC) {
		k := kind + " " + value
		d := dups[k]
		if d == nil {
			d = &Duplicate{Kind: kind, Value: value, UniqueIDs: []string{nodemap.FormatMAC(holder)}}
			dups[k] = d
		}
		d.UniqueIDs = append(d.UniqueIDs, nodemap.FormatMAC(claimant))
	}
	var kept []*view
	for i := range vs {
		v := &vs[i]
		ok := true
		if h, taken := nameOf[v.name]; taken {
			dup("name", v.name, h, v.uid)
			ok = false
		}
		for _, mac := range v.macs {
			if h, taken := macOf[mac]; taken {
				dup("mac", nodemap.FormatMAC(mac), h, v.uid)
				ok = false
			}
		}
		if !ok {
			continue
		}
		nameOf[v.name] = v.uid
		for _, mac := range v.macs {
			macOf[mac] = v.uid
		}
		kept = append(kept, v)
	}
	var ds []Duplicate
	for _, d := range dups {
		ds = append(ds, *d)
	}
	slices.SortFunc(ds, func(a, b Duplicate) int { return cmp.Compare(a.Kind+a.Value, b.Kind+b.Value) })
	return kept, ds
}

// desired updates the hosts table with the present hosts and returns the
// map entries (every host of the table, absent ones flagged) and the
// duplicates (see resolve). A new host whose name an absent host of the
// table had takes that host's id (a host that came back with another
// first interface); otherwise it gets the id it claims from another
// mapper's map if free, else a new one.
func (m *Mapper) desired(now Time) ([]entry, []Duplicate) {
	vs := m.present(now)
	kept, ds := m.tbl.resolve(vs)
	presentUID := make(map[nodemap.MAC]bool, len(vs))
	for i := range vs {
		presentUID[vs[i].uid] = true
	}
	in := make(map[*record]*view, len(kept))
	for _, v := range kept {
		r := m.tbl.byUID[v.uid]
		if r == nil {
			for _, o := range m.tbl.recs {
				if o.name == v.name && !presentUID[o.uid] {
					m.tbl.rename(o, v.uid)
					r = o
					break
				}
			}
		}
		if r == nil {
			if r = m.tbl.add(v.uid, v.name, v.macs, v.claimed); r == nil {
				continue // node ids exhausted
			}
		}
		r.name, r.macs = v.name, slices.Clone(v.macs)
		in[r] = v
	}
	es := make([]entry, 0, len(m.tbl.recs))
	for _, r := range m.tbl.recs {
		v, ok := in[r]
		r.absent = !ok
		e := entry{id: r.id, name: r.name, macs: r.macs}
		if ok {
			e.up, e.seen = v.up, v.seen
		}
		if !ok {
			e.flags = wire.EntryAbsent
		}
		es = append(es, e)
	}
	return es, ds
}
