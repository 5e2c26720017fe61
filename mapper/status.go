package mapper

import (
	"maps"
	"slices"
	"strings"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Status is a snapshot of the mapper's state for gm_board_info, logs and
// tests. It is served as JSON by the daemon.
type Status struct {
	// Host is this host's name and UniqueID its unique id (MACs[0]).
	Host     string `json:"host"`
	UniqueID string `json:"unique_id"`
	// NodeID is this host's node id in the installed map (0 if none).
	NodeID nodemap.NodeID `json:"node_id"`
	// Level is this mapper's level (0 = never maps).
	Level uint8 `json:"level"`
	// Leader reports whether this host is the mapper in charge.
	Leader bool `json:"leader"`
	// Mapper is the unique id of the mapper whose map is installed
	// ("00:00:00:00:00:00" if none), MapVersion that map's version (0 if
	// none) and Hosts the number of hosts in it.
	Mapper     string `json:"mapper"`
	MapVersion uint32 `json:"map_version"`
	Hosts      int    `json:"hosts"`
	// Configured reports whether every host of the installed map has
	// acknowledged it ("Network is fully configured.").
	Configured bool `json:"configured"`
	// Elected is the unique id of the mapper this host follows (or itself),
	// "" while there is none.
	Elected string `json:"elected,omitempty"`
	// Starting is true during the startup passes.
	Starting bool `json:"starting"`
	// Rails describes this unit's interfaces.
	Rails []RailStatus `json:"rails"`
	// Routes are this host's routes in the installed map.
	Routes []RouteStatus `json:"routes"`
	// Duplicates are the names and MACs claimed by more than one host (as
	// seen by the mapper in charge: the leader, or this host if it leads).
	Duplicates []Duplicate `json:"duplicates,omitempty"`
	// Counters are cumulative counters since New.
	Counters Counters `json:"counters"`
}

// RailStatus describes one of this unit's interfaces.
type RailStatus struct {
	Rail int    `json:"rail"`
	MAC  string `json:"mac"`
	Up   bool   `json:"up"`
	// Peers is the number of peer interfaces currently heard on the rail.
	Peers int `json:"peers"`
}

// RouteStatus is one route: this host's interface Local (rail Rail)
// reaches the interface Peer of node Node (host Host).
type RouteStatus struct {
	Node  nodemap.NodeID `json:"node"`
	Host  string         `json:"host"`
	Rail  int            `json:"rail"`
	Local string         `json:"local"`
	Peer  string         `json:"peer"`
}

// Duplicate is a name or MAC address claimed by more than one host. The
// hosts are not merged: the first claimant (the one holding the id) keeps
// it, the others are left out of the map until the conflict ends.
type Duplicate struct {
	// Kind is "name" or "mac".
	Kind string `json:"kind"`
	// Value is the name or MAC address claimed twice.
	Value string `json:"value"`
	// UniqueIDs are the unique ids of the claimants, the one in the map
	// first.
	UniqueIDs []string `json:"unique_ids"`
	// Names are the host names of the claimants of a unique id that two
	// hosts use at once (Kind "mac", both with the same UniqueIDs).
	Names []string `json:"names,omitempty"`
}

// Counters count frames and events. Frame counters are keyed by frame type
// name (wire.Type.String), drops by reason.
type Counters struct {
	FramesIn  map[string]uint64 `json:"frames_in"`
	FramesOut map[string]uint64 `json:"frames_out"`
	Drops     map[string]uint64 `json:"drops"`
	// Remaps is the number of map versions this host issued as mapper.
	Remaps uint64 `json:"remaps"`
	// MapsInstalled is the number of maps given to InstallMap (new
	// versions and route changes).
	MapsInstalled uint64 `json:"maps_installed"`
	// LeaderChanges counts changes of the elected mapper.
	LeaderChanges uint64 `json:"leader_changes"`
	// ConfigRetries counts CONFIG retransmission rounds.
	ConfigRetries uint64 `json:"config_retries"`
	// Stalls counts the calls that came so late after their deadline
	// that the host must have been too slow to run the mapper; the delay
	// is not counted as silence of the peers (see Mapper.Tick).
	Stalls uint64 `json:"stalls"`
	// LossWindows counts the windows in which the driver's receive rings
	// lost frames (see Mapper.FramesLost); they are not counted as
	// silence of the peers heard there.
	LossWindows uint64 `json:"loss_windows"`
}

// Drop reasons (keys of Counters.Drops).
const (
	DropMalformed = "malformed"  // not a valid EtherGM frame (short, length, CRC, version)
	DropNotMapper = "not_mapper" // an EtherGM frame of a non-mapper type or port
	DropBody      = "bad_body"   // a mapper body that does not parse
	DropRevision  = "revision"   // a mapper body of another revision
	DropMap       = "bad_map"    // a complete map that is inconsistent (ids, names or MACs repeat)
	DropConflict  = "conflict"   // a SCOUT naming a host that another host's SCOUTs name too
	DropRail      = "bad_rail"   // a rail number out of range
	DropSelf      = "self"       // our own frame heard back
	DropForged    = "forged"     // source MAC disagrees with the body
	DropName      = "bad_name"   // a host name a map cannot hold
	DropStale     = "stale"      // an old or foreign map version, or not from the elected mapper
	DropUnknown   = "unknown"    // from a host not (yet) known
	DropRailDown  = "rail_down"  // received on a rail that is down
)

// Status returns a snapshot of the mapper's state.
func (m *Mapper) Status() Status {
	s := m.Summary()
	if !m.leading() && m.self.started {
		// The duplicates among the hosts this host hears.
		_, ds := m.tbl.resolve(m.present(m.self.lastScout))
		s.Duplicates = append(ds, s.Duplicates...)
		slices.SortFunc(s.Duplicates, func(a, b Duplicate) int { return strings.Compare(a.Kind+a.Value, b.Kind+b.Value) })
	}
	// The counters as kept, with the frame counts by type and a copy of
	// the drops (the Mapper keeps counting into its own map).
	s.Counters = m.counters
	s.Counters.FramesIn, s.Counters.FramesOut = byType(&m.framesIn), byType(&m.framesOut)
	s.Counters.Drops = maps.Clone(m.counters.Drops)
	rail := map[nodemap.MAC]int{}
	for r, mac := range m.cfg.MACs {
		rail[mac] = r
		s.Rails = append(s.Rails, RailStatus{Rail: r, MAC: nodemap.FormatMAC(mac), Up: m.self.railUp[r]})
	}
	for _, h := range m.net.macs {
		for r := range m.cfg.MACs {
			if m.alive(h[r], m.self.lastScout) {
				s.Rails[r].Peers++
			}
		}
	}
	for _, r := range m.cur.m.Routes() {
		e, _ := m.cur.m.ByID(r.Node)
		s.Routes = append(s.Routes, RouteStatus{Node: r.Node, Host: e.Host, Rail: rail[r.Local],
			Local: nodemap.FormatMAC(r.Local), Peer: nodemap.FormatMAC(r.Peer)})
	}
	return s
}

// Summary is Status without Rails, Routes and Counters, and without the
// duplicates a follower finds among the hosts it hears (a follower's
// Duplicates are only the unique ids claimed twice): what a driver logs
// several times a second, at a cost that does not grow with the cluster
// (a follower's Status sorts every host it hears, and formats thousands
// of strings for the routes).
func (m *Mapper) Summary() Status {
	s := Status{
		Host:       m.cfg.Host,
		UniqueID:   nodemap.FormatMAC(m.cfg.MACs[0]),
		NodeID:     m.cur.self,
		Level:      m.cfg.Level,
		Leader:     m.leading(),
		Mapper:     nodemap.FormatMAC(m.cur.mapper),
		MapVersion: m.cur.version,
		Hosts:      m.cur.m.Len(),
		Configured: m.configured(),
		Starting:   m.self.starting || !m.self.started,
	}
	if m.leading() {
		s.Duplicates = slices.Clone(m.dups)
	}
	for uid, c := range m.net.conflicts {
		u := nodemap.FormatMAC(uid)
		s.Duplicates = append(s.Duplicates, Duplicate{Kind: "mac", Value: u, UniqueIDs: []string{u, u}, Names: slices.Clone(c.names)})
	}
	slices.SortFunc(s.Duplicates, func(a, b Duplicate) int { return strings.Compare(a.Kind+a.Value, b.Kind+b.Value) })
	if m.elected != (nodemap.MAC{}) {
		s.Elected = nodemap.FormatMAC(m.elected)
	}
	return s
}

func byType(c *[256]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for t, n := range c {
		if n != 0 {
			out[wire.Type(t).String()] = n
		}
	}
	return out
}
