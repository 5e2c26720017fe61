package gm

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// NodeID is a GM node id: the stable, network-wide id a node map assigns
// to a host (GM-1 semantics). NoSuchNodeID (0) is never a valid id.
type NodeID uint32

// NoSuchNodeID is GM_NO_SUCH_NODE_ID, returned by lookups that fail.
const NoSuchNodeID NodeID = 0

// MaxNodeID is the largest node id a map may assign.
const MaxNodeID NodeID = 1<<20 - 1

// MaxHostNameLen is GM_MAX_HOST_NAME_LEN.
const MaxHostNameLen = 128

// MapEntry is one host of a node map.
type MapEntry struct {
	// ID is the host's node id.
	ID NodeID
	// Host is the host name (what ETHERGM_HOST or Config.Host says).
	Host string
	// MACs are the MAC addresses of the host's unit, one per rail; MACs[0]
	// is the rail frames are sent to and the host's unique id.
	MACs [][6]byte
}

// NodeMap is a parsed node map file. The zero value is an empty map.
// A NodeMap is immutable once built and safe for concurrent use.
type NodeMap struct {
	entries []MapEntry
	byID    map[NodeID]int
	byHost  map[string]int
	byMAC   map[[6]byte]int
}

// ParseNodeMap parses a node map. Each non-blank line that does not start
// with '#' (after spaces) describes one host:
//
//	node-id host-name mac[,mac...]
//
// Fields are separated by spaces or tabs; a '#' starts a comment that runs
// to the end of the line. Node ids are decimal, 1..MaxNodeID, and unique;
// host names and MAC addresses are unique.
func ParseNodeMap(data []byte) (*NodeMap, error) {
	m := &NodeMap{byID: map[NodeID]int{}, byHost: map[string]int{}, byMAC: map[[6]byte]int{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("gm: node map line %d: want \"node-id host-name mac[,mac...]\", got %d fields", line, len(f))
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 || NodeID(id) > MaxNodeID {
			return nil, fmt.Errorf("gm: node map line %d: bad node id %q (1..%d)", line, f[0], MaxNodeID)
		}
		if len(f[1]) > MaxHostNameLen {
			return nil, fmt.Errorf("gm: node map line %d: host name longer than %d bytes", line, MaxHostNameLen)
		}
		e := MapEntry{ID: NodeID(id), Host: f[1]}
		for _, s := range strings.Split(f[2], ",") {
			hw, err := net.ParseMAC(s)
			if err != nil || len(hw) != 6 {
				return nil, fmt.Errorf("gm: node map line %d: bad MAC address %q", line, s)
			}
			mac := [6]byte(hw)
			if _, dup := m.byMAC[mac]; dup {
				return nil, fmt.Errorf("gm: node map line %d: MAC %s listed twice", line, s)
			}
			m.byMAC[mac] = len(m.entries)
			e.MACs = append(e.MACs, mac)
		}
		if _, dup := m.byID[e.ID]; dup {
			return nil, fmt.Errorf("gm: node map line %d: node id %d listed twice", line, id)
		}
		if _, dup := m.byHost[e.Host]; dup {
			return nil, fmt.Errorf("gm: node map line %d: host %q listed twice", line, e.Host)
		}
		m.byID[e.ID] = len(m.entries)
		m.byHost[e.Host] = len(m.entries)
		m.entries = append(m.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gm: node map: %w", err)
	}
	return m, nil
}

// Format returns the map in the file format ParseNodeMap reads.
func (m *NodeMap) Format() []byte {
	var b bytes.Buffer
	b.WriteString("# node-id host-name mac[,mac...]\n")
	for _, e := range m.entries {
		macs := make([]string, len(e.MACs))
		for i, mac := range e.MACs {
			macs[i] = net.HardwareAddr(mac[:]).String()
		}
		fmt.Fprintf(&b, "%d %s %s\n", e.ID, e.Host, strings.Join(macs, ","))
	}
	return b.Bytes()
}

// NewNodeMap builds a map from entries (for programs that generate map
// files, such as tests and a future mapper).
func NewNodeMap(entries []MapEntry) (*NodeMap, error) {
	var b bytes.Buffer
	for _, e := range entries {
		macs := make([]string, len(e.MACs))
		for i, mac := range e.MACs {
			macs[i] = net.HardwareAddr(mac[:]).String()
		}
		fmt.Fprintf(&b, "%d %s %s\n", e.ID, e.Host, strings.Join(macs, ","))
	}
	return ParseNodeMap(b.Bytes())
}

// Entries returns the map's hosts in file order.
func (m *NodeMap) Entries() []MapEntry { return m.entries }

// ByID returns the entry of node id.
func (m *NodeMap) ByID(id NodeID) (MapEntry, bool) {
	if m == nil {
		return MapEntry{}, false
	}
	i, ok := m.byID[id]
	if !ok {
		return MapEntry{}, false
	}
	return m.entries[i], true
}

// ByHost returns the entry of host name.
func (m *NodeMap) ByHost(name string) (MapEntry, bool) {
	if m == nil {
		return MapEntry{}, false
	}
	i, ok := m.byHost[name]
	if !ok {
		return MapEntry{}, false
	}
	return m.entries[i], true
}

// ByMAC returns the entry that lists mac.
func (m *NodeMap) ByMAC(mac [6]byte) (MapEntry, bool) {
	if m == nil {
		return MapEntry{}, false
	}
	i, ok := m.byMAC[mac]
	if !ok {
		return MapEntry{}, false
	}
	return m.entries[i], true
}

// GlobalID returns the GM-2 global id of a host: the low 32 bits of its
// first MAC address (GM's "packed MAC" this_global_id).
func (e MapEntry) GlobalID() uint32 {
	if len(e.MACs) == 0 {
		return 0
	}
	m := e.MACs[0]
	return uint32(m[2])<<24 | uint32(m[3])<<16 | uint32(m[4])<<8 | uint32(m[5])
}

// mapWatcher reloads a node map file when it changes.
type mapWatcher struct {
	path    string
	modTime time.Time
	size    int64
}

// load reads the file if it changed since the last load. It returns
// (nil, nil) when nothing changed.
func (w *mapWatcher) load() (*NodeMap, error) {
	fi, err := os.Stat(w.path)
	if err != nil {
		return nil, err
	}
	if fi.ModTime().Equal(w.modTime) && fi.Size() == w.size {
		return nil, nil
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		return nil, err
	}
	m, err := ParseNodeMap(data)
	if err != nil {
		return nil, err
	}
	w.modTime, w.size = fi.ModTime(), fi.Size()
	return m, nil
}
