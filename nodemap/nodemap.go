// Package nodemap is the node map that EtherGM's mapper writes and its ports
// read: which hosts form the cluster, their node ids, names and MAC
// addresses (one per rail), the map's version and the mapper that made it,
// and this host's routes (which of a peer's MACs each local interface
// reaches).
//
// It is shared by package gm (the ports), package mapper (the gm_mapper
// daemon) and the tools (gm_board_info), and depends on none of them.
//
// # File format
//
// One record per line; '#' starts a comment that runs to the end of the
// line; fields are separated by spaces or tabs.
//
//	version <n>                        map version (decimal, 1..2^32-1)
//	mapper <mac>                       unique id of the mapper that made the map
//	<node-id> <host-name> <mac>[,<mac>...]   one host: its MACs in rail order
//	route <node-id> <local-mac> <peer-mac>   this host's interface <local-mac> reaches <peer-mac> of node <node-id>
//
// A map without version and mapper lines is a static map (written by hand,
// as GM-1's static.map was); a map without route lines pairs rail n of
// this host with the n-th MAC of every peer. A map written by gm_mapper has
// all four kinds of lines.
package nodemap

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NodeID is a GM node id: the stable, network-wide id a node map assigns to
// a host (GM-1 semantics). NoSuchNodeID (0) is never a valid id.
type NodeID uint32

// NoSuchNodeID is GM_NO_SUCH_NODE_ID, returned by lookups that fail.
const NoSuchNodeID NodeID = 0

// MaxNodeID is the largest node id a map may assign.
const MaxNodeID NodeID = 1<<20 - 1

// MaxHostNameLen is GM_MAX_HOST_NAME_LEN.
const MaxHostNameLen = 128

// MaxRails is the largest number of MAC addresses (rails) of one host.
const MaxRails = 8

// MAC is an Ethernet address.
type MAC = [6]byte

// Entry is one host of a node map.
type Entry struct {
	// ID is the host's node id.
	ID NodeID
	// Host is the host name.
	Host string
	// MACs are the MAC addresses of the host's unit, one per rail; MACs[0]
	// is the host's unique id.
	MACs []MAC
}

// GlobalID returns the GM-2 global id of a host: the low 32 bits of its
// first MAC address (GM's "packed MAC" this_global_id).
func (e Entry) GlobalID() uint32 {
	if len(e.MACs) == 0 {
		return 0
	}
	m := e.MACs[0]
	return uint32(m[2])<<24 | uint32(m[3])<<16 | uint32(m[4])<<8 | uint32(m[5])
}

// Route says that the local interface with MAC Local reaches the interface
// Peer of node Node.
type Route struct {
	Node  NodeID
	Local MAC
	Peer  MAC
}

// Map is a node map. A Map is immutable once built and safe for concurrent
// use; the nil *Map is an empty map.
type Map struct {
	// Version is the map version (0 for a static map).
	Version uint32
	// Mapper is the unique id of the mapper that made the map (zero for a
	// static map).
	Mapper MAC

	entries []Entry
	routes  []Route // sorted by node
	// Indexes of entries, sorted for binary search: by node id, by host
	// name, and (entry<<3 | rail) by MAC. A map of a million hosts keeps
	// about 80 bytes per host.
	byID   []int32
	byHost []int32
	byMAC  []uint32
}

// ErrFormat is wrapped by the errors of Parse.
var ErrFormat = errors.New("malformed node map")

// Parse parses a node map file (see the package documentation). Node ids
// are 1..MaxNodeID and unique; host names and MAC addresses are unique.
func Parse(data []byte) (*Map, error) {
	var (
		entries []Entry
		routes  []Route
		version uint32
		mapper  MAC
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	line := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrFormat, line, fmt.Sprintf(format, args...))
	}
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
		switch f[0] {
		case "version":
			if len(f) != 2 {
				return nil, bad("want \"version <n>\"")
			}
			v, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil || v == 0 {
				return nil, bad("bad map version %q (1..%d)", f[1], uint32(1<<32-1))
			}
			version = uint32(v)
			continue
		case "mapper":
			if len(f) != 2 {
				return nil, bad("want \"mapper <mac>\"")
			}
			m, err := ParseMAC(f[1])
			if err != nil {
				return nil, bad("bad mapper MAC address %q", f[1])
			}
			mapper = m
			continue
		case "route":
			if len(f) != 4 {
				return nil, bad("want \"route <node-id> <local-mac> <peer-mac>\"")
			}
			id, err := parseID(f[1])
			if err != nil {
				return nil, bad("%v", err)
			}
			local, err1 := ParseMAC(f[2])
			peer, err2 := ParseMAC(f[3])
			if err1 != nil || err2 != nil {
				return nil, bad("bad MAC address in route")
			}
			routes = append(routes, Route{Node: id, Local: local, Peer: peer})
			continue
		}
		if len(f) != 3 {
			return nil, bad("want \"node-id host-name mac[,mac...]\", got %d fields", len(f))
		}
		id, err := parseID(f[0])
		if err != nil {
			return nil, bad("%v", err)
		}
		e := Entry{ID: id, Host: f[1]}
		for _, s := range strings.Split(f[2], ",") {
			mac, err := ParseMAC(s)
			if err != nil {
				return nil, bad("bad MAC address %q", s)
			}
			e.MACs = append(e.MACs, mac)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	m, err := New(version, mapper, entries, routes)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func parseID(s string) (NodeID, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 || NodeID(id) > MaxNodeID {
		return 0, fmt.Errorf("bad node id %q (1..%d)", s, MaxNodeID)
	}
	return NodeID(id), nil
}

// ParseMAC parses a 6-byte MAC address written as six pairs of hex digits
// separated by ':' or '-' (02:00:5e:10:00:01).
func ParseMAC(s string) (MAC, error) {
	var m MAC
	if len(s) != 17 {
		return m, fmt.Errorf("%q is not a MAC address (xx:xx:xx:xx:xx:xx)", s)
	}
	for i := range 6 {
		if i > 0 && s[3*i-1] != ':' && s[3*i-1] != '-' {
			return m, fmt.Errorf("%q is not a MAC address (xx:xx:xx:xx:xx:xx)", s)
		}
		hi, ok1 := unhex(s[3*i])
		lo, ok2 := unhex(s[3*i+1])
		if !ok1 || !ok2 {
			return m, fmt.Errorf("%q is not a MAC address (xx:xx:xx:xx:xx:xx)", s)
		}
		m[i] = hi<<4 | lo
	}
	return m, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// FormatMAC formats a MAC address as xx:xx:xx:xx:xx:xx.
func FormatMAC(m MAC) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 17)
	for i, x := range m {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, digits[x>>4], digits[x&15])
	}
	return string(b)
}

// New builds a map. Entries keep their order; routes must name nodes of the
// map. It returns an error wrapping ErrFormat when ids, names or MACs repeat
// or are out of range.
func New(version uint32, mapper MAC, entries []Entry, routes []Route) (*Map, error) {
	if len(entries) > int(MaxNodeID) {
		return nil, fmt.Errorf("%w: %d hosts (at most %d)", ErrFormat, len(entries), MaxNodeID)
	}
	nmacs, nname := 0, 0
	for _, e := range entries {
		if e.ID == NoSuchNodeID || e.ID > MaxNodeID {
			return nil, fmt.Errorf("%w: bad node id %d (1..%d)", ErrFormat, e.ID, MaxNodeID)
		}
		if !ValidHostName(e.Host) {
			return nil, fmt.Errorf("%w: node %d: bad host name %q (1..%d bytes, no spaces, '#' or ',')", ErrFormat, e.ID, e.Host, MaxHostNameLen)
		}
		if len(e.MACs) == 0 || len(e.MACs) > MaxRails {
			return nil, fmt.Errorf("%w: node %d: %d MAC addresses (1..%d)", ErrFormat, e.ID, len(e.MACs), MaxRails)
		}
		nmacs += len(e.MACs)
		nname += len(e.Host)
	}
	// One allocation for every name and one for every MAC, rather than
	// one per host.
	var names strings.Builder
	names.Grow(nname)
	for _, e := range entries {
		names.WriteString(e.Host)
	}
	all, macs := names.String(), make([]MAC, 0, nmacs)
	m := &Map{Version: version, Mapper: mapper, entries: make([]Entry, len(entries))}
	off := 0
	for i, e := range entries {
		first := len(macs)
		macs = append(macs, e.MACs...)
		m.entries[i] = Entry{ID: e.ID, Host: all[off : off+len(e.Host)], MACs: macs[first:len(macs):len(macs)]}
		off += len(e.Host)
	}

	m.byID = make([]int32, len(entries))
	m.byHost = make([]int32, len(entries))
	for i := range entries {
		m.byID[i], m.byHost[i] = int32(i), int32(i)
	}
	slices.SortFunc(m.byID, func(a, b int32) int { return cmp.Compare(m.entries[a].ID, m.entries[b].ID) })
	slices.SortFunc(m.byHost, func(a, b int32) int { return strings.Compare(m.entries[a].Host, m.entries[b].Host) })
	for k := 1; k < len(entries); k++ {
		if a, b := m.entries[m.byID[k-1]], m.entries[m.byID[k]]; a.ID == b.ID {
			return nil, fmt.Errorf("%w: node id %d listed twice", ErrFormat, a.ID)
		}
		if a, b := m.entries[m.byHost[k-1]], m.entries[m.byHost[k]]; a.Host == b.Host {
			return nil, fmt.Errorf("%w: host %q listed twice", ErrFormat, a.Host)
		}
	}
	m.byMAC = make([]uint32, 0, nmacs)
	for i, e := range m.entries {
		for r := range e.MACs {
			m.byMAC = append(m.byMAC, uint32(i)<<3|uint32(r))
		}
	}
	slices.SortFunc(m.byMAC, func(a, b uint32) int { return compareMAC(m.macAt(a), m.macAt(b)) })
	for k := 1; k < len(m.byMAC); k++ {
		if a, b := m.macAt(m.byMAC[k-1]), m.macAt(m.byMAC[k]); a == b {
			return nil, fmt.Errorf("%w: MAC %s listed twice", ErrFormat, FormatMAC(a))
		}
	}

	m.routes = slices.Clone(routes)
	for _, r := range m.routes {
		if _, ok := m.ByID(r.Node); !ok {
			return nil, fmt.Errorf("%w: route to node %d, which is not in the map", ErrFormat, r.Node)
		}
	}
	slices.SortStableFunc(m.routes, func(a, b Route) int { return int(a.Node) - int(b.Node) })
	return m, nil
}

func compareMAC(a, b MAC) int { return bytes.Compare(a[:], b[:]) }

// macAt returns the MAC of a byMAC index.
func (m *Map) macAt(k uint32) MAC { return m.entries[k>>3].MACs[k&7] }

// ValidHostName reports whether name can be a host name in a map.
func ValidHostName(name string) bool {
	if name == "" || len(name) > MaxHostNameLen {
		return false
	}
	return !strings.ContainsAny(name, " \t\r\n#,\x00")
}

// Format returns the map in the file format Parse reads.
func (m *Map) Format() []byte {
	var b bytes.Buffer
	b.WriteString("# EtherGM node map: node-id host-name mac[,mac...] (see package nodemap)\n")
	if m == nil {
		return b.Bytes()
	}
	if m.Version != 0 {
		fmt.Fprintf(&b, "version %d\n", m.Version)
	}
	if m.Mapper != (MAC{}) {
		fmt.Fprintf(&b, "mapper %s\n", FormatMAC(m.Mapper))
	}
	for _, e := range m.entries {
		macs := make([]string, len(e.MACs))
		for i, mac := range e.MACs {
			macs[i] = FormatMAC(mac)
		}
		fmt.Fprintf(&b, "%d %s %s\n", e.ID, e.Host, strings.Join(macs, ","))
	}
	for _, r := range m.routes {
		fmt.Fprintf(&b, "route %d %s %s\n", r.Node, FormatMAC(r.Local), FormatMAC(r.Peer))
	}
	return b.Bytes()
}

// Len returns the number of hosts.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.entries)
}

// Entries returns the map's hosts in file order. The caller must not
// modify them.
func (m *Map) Entries() []Entry {
	if m == nil {
		return nil
	}
	return m.entries
}

// Routes returns every route of the map, ordered by node. The caller must
// not modify them.
func (m *Map) Routes() []Route {
	if m == nil {
		return nil
	}
	return m.routes
}

// Routed reports whether the map's routes decide which peer MAC each local
// interface reaches: a map made by a mapper (it names its mapper), or a
// hand-written map with route lines. Otherwise (a static map without
// routes) rail n of this host pairs with the n-th MAC of every peer. A
// mapper's map without a route to a host means that host is unreachable.
func (m *Map) Routed() bool { return m != nil && (len(m.routes) > 0 || m.Mapper != MAC{}) }

// RoutesTo returns the routes to node, in map order.
func (m *Map) RoutesTo(node NodeID) []Route {
	if m == nil {
		return nil
	}
	i, _ := slices.BinarySearchFunc(m.routes, node, func(r Route, n NodeID) int { return int(r.Node) - int(n) })
	j := i
	for j < len(m.routes) && m.routes[j].Node == node {
		j++
	}
	return m.routes[i:j]
}

// PeerMAC returns the MAC of node that the local interface local reaches:
// in a routed map, the route's peer MAC (false if local has no route to
// node); in a static map, rail pairing: the peer's MAC at the position of
// local in self's entry, or its first MAC if self is not in the map or
// has fewer rails.
func (m *Map) PeerMAC(self, node NodeID, local MAC) (MAC, bool) {
	e, ok := m.ByID(node)
	if !ok {
		return MAC{}, false
	}
	if m.Routed() {
		for _, r := range m.RoutesTo(node) {
			if r.Local == local {
				return r.Peer, true
			}
		}
		return MAC{}, false
	}
	if own, ok := m.ByID(self); ok {
		for i, mac := range own.MACs {
			if mac == local && i < len(e.MACs) {
				return e.MACs[i], true
			}
		}
	}
	return e.MACs[0], true
}

// ByID returns the entry of node id.
func (m *Map) ByID(id NodeID) (Entry, bool) {
	if m == nil {
		return Entry{}, false
	}
	k, ok := slices.BinarySearchFunc(m.byID, id, func(i int32, id NodeID) int { return cmp.Compare(m.entries[i].ID, id) })
	if !ok {
		return Entry{}, false
	}
	return m.entries[m.byID[k]], true
}

// ByHost returns the entry of host name.
func (m *Map) ByHost(name string) (Entry, bool) {
	if m == nil {
		return Entry{}, false
	}
	k, ok := slices.BinarySearchFunc(m.byHost, name, func(i int32, name string) int { return strings.Compare(m.entries[i].Host, name) })
	if !ok {
		return Entry{}, false
	}
	return m.entries[m.byHost[k]], true
}

// ByMAC returns the entry that lists mac.
func (m *Map) ByMAC(mac MAC) (Entry, bool) {
	if m == nil {
		return Entry{}, false
	}
	k, ok := slices.BinarySearchFunc(m.byMAC, mac, func(i uint32, mac MAC) int { return compareMAC(m.macAt(i), mac) })
	if !ok {
		return Entry{}, false
	}
	return m.entries[m.byMAC[k]>>3], true
}

// Self finds this host in the map: by name first, then by any of its MAC
// addresses (the unit's interfaces).
func (m *Map) Self(host string, macs ...MAC) (Entry, bool) {
	if e, ok := m.ByHost(host); ok {
		return e, true
	}
	for _, mac := range macs {
		if e, ok := m.ByMAC(mac); ok {
			return e, true
		}
	}
	return Entry{}, false
}

// MaxNodeIDInUse returns the largest node id of the map (0 if empty).
func (m *Map) MaxNodeIDInUse() NodeID {
	var max NodeID
	for _, e := range m.Entries() {
		if e.ID > max {
			max = e.ID
		}
	}
	return max
}

// WriteFile writes m to path atomically: readers see the old file or the
// new one, never a part. The directory is created if needed.
func WriteFile(path string, m *Map) error {
	return WriteFileAtomic(path, m.Format(), 0o644)
}

// WriteFileAtomic writes data to path so that readers see the old content
// or the new, never a part: a temporary file in the same directory, synced,
// renamed into place, the directory synced. The directory is created if
// needed. (The mapper writes its hosts file with it too.)
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable once the directory is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Watcher reloads a node map file when it changes (a new file renamed into
// place, or the file rewritten).
type Watcher struct {
	// Path is the map file.
	Path string

	modTime time.Time
	size    int64
	ino     uint64
}

// Load reads the file if it changed since the last successful Load. It
// returns (nil, nil) when nothing changed. The maps it returns are shared
// by the Watchers of the process that load the same version of the file
// (see shared.go): they must not be modified. A missing file is an error
// wrapping fs.ErrNotExist.
func (w *Watcher) Load() (*Map, error) {
	fi, err := os.Stat(w.Path)
	if err != nil {
		return nil, err
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	if fi.ModTime().Equal(w.modTime) && fi.Size() == w.size && ino == w.ino {
		return nil, nil
	}
	key := sharedKey(w.Path, fi.ModTime(), fi.Size(), ino)
	if m := sharedMap(key); m != nil {
		w.modTime, w.size, w.ino = fi.ModTime(), fi.Size(), ino
		return m, nil
	}
	data, err := os.ReadFile(w.Path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Path, err)
	}
	w.modTime, w.size, w.ino = fi.ModTime(), fi.Size(), ino
	shareMap(key, m)
	return m, nil
}
