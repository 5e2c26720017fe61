package wire

import (
	"bytes"
	"encoding/binary"
	"iter"
)

// Mapper body constants.
const (
	// MapperRev is the revision of the mapper bodies this package speaks,
	// carried in byte 0 of every SCOUT, SCOUT_REPLY, CONFIG and CONFIG_ACK
	// body. Receivers drop bodies of another revision (ErrMapperRev).
	MapperRev = 2
	// MaxHostNameLen is the longest host name a mapper body may carry
	// (GM_MAX_HOST_NAME_LEN). Names contain no NUL byte.
	MaxHostNameLen = 128
	// MaxRails is the largest number of interfaces (rails) of one host a
	// mapper body can describe.
	MaxRails = 8
	// HostInfoLen is the length of the fixed part of a HostInfo body (SCOUT
	// and SCOUT_REPLY payloads), before the rails and the host name.
	HostInfoLen = 20
	// HostRailLen is the length of one rail of a HostInfo body.
	HostRailLen = 8
	// ConfigLen is the length of the fixed part of a Config body (CONFIG
	// payload), before the entries.
	ConfigLen = 20
	// ConfigEntryLen is the length of the fixed part of one Config entry,
	// before its rails and host name.
	ConfigEntryLen = 8
	// ConfigRailLen is the length of one rail of a Config entry.
	ConfigRailLen = 8
	// ConfigAckLen is the length of a ConfigAck body (CONFIG_ACK payload).
	ConfigAckLen = 16
	// NodeNone is the node id of a host that has not been assigned one.
	NodeNone uint32 = 0
)

// HostFlags are the flags of a HostInfo body.
type HostFlags uint8

// HostInfo flags.
const (
	// HostHello: the sender is starting (its startup passes); every host
	// that hears the SCOUT answers it with a unicast SCOUT_REPLY.
	HostHello HostFlags = 1 << 0
	// HostLeader: the sender is the mapper in charge (it leads, whether or
	// not it has made a map yet); the hosts that follow it send their
	// SCOUTs to it, unicast. With MapperID = UniqueID, the map it names is
	// its own.
	HostLeader HostFlags = 1 << 1
	// HostConfigured: every host of the map the sender holds has
	// acknowledged it (the network is fully configured).
	HostConfigured HostFlags = 1 << 2
)

// RailState is the state of one of a host's interfaces in a HostInfo body.
type RailState uint8

// Rail states.
const (
	// RailUp: the interface's link is up.
	RailUp RailState = 1 << 0
	// RailHearing: the host heard at least one other host on the interface
	// within the last verification intervals.
	RailHearing RailState = 1 << 1
)

// HostRail is one interface of a host in a HostInfo body.
type HostRail struct {
	// MAC is the interface's address.
	MAC [6]byte
	// State is the interface's state.
	State RailState
}

// HostInfo is the body of SCOUT and SCOUT_REPLY frames: a host's identity,
// its interfaces and the map it holds. Wire layout (big-endian):
//
//	revision u8 | flags u8 | level u8 | name length u8 |
//	map version u32 | node id u32 |
//	mapper unique id [6] | rail count u8 | reserved u8 |
//	rails [rail count] (MAC [6] | state u8 | reserved u8) |
//	name [name length]
//
// The MAC of rail 0 is the host's unique id.
type HostInfo struct {
	// Flags are the HostInfo flags.
	Flags HostFlags
	// UniqueID is the sending host's unique id: the MAC of its first
	// interface (rail 0).
	UniqueID [6]byte
	// Level is the sender's mapper level: 0 for a host that never maps,
	// higher for one that may. Among competing mappers the one with the
	// highest (Level, UniqueID) is in charge.
	Level uint8
	// MapVersion is the version of the map the sender holds, 0 if none.
	MapVersion uint32
	// MapperID is the unique id of the mapper whose map the sender holds,
	// all zero if none.
	MapperID [6]byte
	// NodeID is the node id the sender holds in that map, NodeNone (0) if
	// none.
	NodeID uint32
	// NumRails is the number of valid Rails (1..MaxRails). Zero when
	// building a body means one rail, UniqueID, up.
	NumRails uint8
	// Rails are the sender's interfaces in rail order; Rails[0].MAC is
	// UniqueID.
	Rails [MaxRails]HostRail
	// Name is the host name, at most MaxHostNameLen bytes, no NUL. After
	// ParseHostInfo it aliases the input.
	Name []byte
}

// rails returns the rails h describes, applying the NumRails == 0 default.
// ok is false if the rails are inconsistent with UniqueID or too many.
func (h *HostInfo) rails() (rs [MaxRails]HostRail, n int, ok bool) {
	if h.NumRails == 0 {
		rs[0] = HostRail{MAC: h.UniqueID, State: RailUp}
		return rs, 1, true
	}
	if h.NumRails > MaxRails {
		return rs, 0, false
	}
	if h.UniqueID != ([6]byte{}) && h.UniqueID != h.Rails[0].MAC {
		return rs, 0, false
	}
	return h.Rails, int(h.NumRails), true
}

// AppendHostInfo appends the HostInfo body of h to b. It returns ErrName,
// and b unchanged, if h.Name is too long or contains a NUL byte, and ErrBody
// if NumRails exceeds MaxRails or UniqueID is set and differs from
// Rails[0].MAC. It does not allocate when cap(b) suffices.
func AppendHostInfo(b []byte, h *HostInfo) ([]byte, error) {
	if !validName(h.Name) {
		return b, ErrName
	}
	rs, nr, ok := h.rails()
	if !ok {
		return b, ErrBody
	}
	n := len(b)
	b = grow(b, HostInfoLen+nr*HostRailLen+len(h.Name))
	e := b[n:]
	e[0] = MapperRev
	e[1] = uint8(h.Flags)
	e[2] = h.Level
	e[3] = uint8(len(h.Name))
	binary.BigEndian.PutUint32(e[4:], h.MapVersion)
	binary.BigEndian.PutUint32(e[8:], h.NodeID)
	copy(e[12:18], h.MapperID[:])
	e[18] = uint8(nr)
	e[19] = 0
	off := HostInfoLen
	for i := range nr {
		copy(e[off:off+6], rs[i].MAC[:])
		e[off+6] = uint8(rs[i].State)
		e[off+7] = 0
		off += HostRailLen
	}
	copy(e[off:], h.Name)
	return b, nil
}

// ParseHostInfo parses a SCOUT or SCOUT_REPLY payload. It returns
// ErrMapperRev if the body's revision is not MapperRev, and ErrBody unless
// the body is exactly HostInfoLen bytes plus the rails and the name, with
// 1..MaxRails rails and a valid name. The returned Name aliases body. It
// does not allocate.
func ParseHostInfo(body []byte) (HostInfo, error) {
	if len(body) < HostInfoLen {
		return HostInfo{}, ErrBody
	}
	if body[0] != MapperRev {
		return HostInfo{}, ErrMapperRev
	}
	nr := int(body[18])
	nl := int(body[3])
	if nr < 1 || nr > MaxRails || len(body) != HostInfoLen+nr*HostRailLen+nl {
		return HostInfo{}, ErrBody
	}
	noff := HostInfoLen + nr*HostRailLen
	name := body[noff : noff+nl : noff+nl]
	if !validName(name) {
		return HostInfo{}, ErrBody
	}
	h := HostInfo{
		Flags:      HostFlags(body[1]),
		Level:      body[2],
		MapVersion: binary.BigEndian.Uint32(body[4:]),
		NodeID:     binary.BigEndian.Uint32(body[8:]),
		MapperID:   [6]byte(body[12:18]),
		NumRails:   uint8(nr),
		Name:       name,
	}
	for i := range nr {
		r := body[HostInfoLen+i*HostRailLen:]
		h.Rails[i] = HostRail{MAC: [6]byte(r[0:6]), State: RailState(r[6])}
	}
	h.UniqueID = h.Rails[0].MAC
	return h, nil
}

// ConfigFlags are the flags of a Config body.
type ConfigFlags uint8

// Config flags.
const (
	// ConfigTable marks a hosts table handed over by a mapper that steps
	// down to the mapper now in charge, which merges it into its own table
	// (ids of hosts it does not know are kept if free). Hosts never install
	// it as a map.
	ConfigTable ConfigFlags = 1 << 0
)

// ConfigHeader holds the fixed fields of a Config body that a mapper chooses.
type ConfigHeader struct {
	// Flags are the Config flags.
	Flags ConfigFlags
	// MapVersion is the version of the map; a host installs a map only if
	// it comes from the mapper it follows and its version is newer than the
	// one it holds.
	MapVersion uint32
	// MapperID is the unique id (MAC) of the mapper that computed the map.
	MapperID [6]byte
	// TotalHosts is the number of entries in the whole host table.
	TotalHosts uint16
	// First is the index in the host table of this frame's first entry.
	First uint16
}

// EntryFlags are the flags of a Config entry.
type EntryFlags uint8

// Config entry flags.
const (
	// EntryAbsent marks a host that has left the network: its node id stays
	// reserved for it, and no host has a route to it.
	EntryAbsent EntryFlags = 1 << 0
)

// ConfigEntry is one row of the host table: a host's node id, interfaces
// and name. Wire layout: node id u32 | flags u8 | rail count u8 |
// up mask u8 | name length u8 | rails [rail count] (MAC [6] | seen u8 |
// reserved u8) | name [name length].
type ConfigEntry struct {
	// NodeID is the node id the mapper assigned to the host (never 0).
	NodeID uint32
	// Flags are the entry flags.
	Flags EntryFlags
	// UniqueID is the host's unique id: the MAC of its rail 0.
	UniqueID [6]byte
	// NumRails is the number of valid MACs (1..MaxRails). Zero when
	// building a body means one rail, UniqueID, up.
	NumRails uint8
	// UpMask has bit r set when the host's rail r is up and hears peers.
	UpMask uint8
	// MACs are the host's interfaces in rail order; MACs[0] is UniqueID.
	MACs [MaxRails][6]byte
	// Seen has, per interface, bit s set when the mapper hears that MAC on
	// its own rail s: two interfaces whose Seen masks share a bit are on
	// one segment, which is how a host learns routes to peers it does not
	// hear itself. The mapper's own interface r has bit r. Zero: the
	// mapper does not hear it.
	Seen [MaxRails]uint8
	// Name is the host name, at most MaxHostNameLen bytes, no NUL. In
	// entries from a parsed Config it aliases the frame.
	Name []byte
}

func (e *ConfigEntry) macs() (ms [MaxRails][6]byte, n int, up uint8, ok bool) {
	if e.NumRails == 0 {
		ms[0] = e.UniqueID
		return ms, 1, 1, e.UpMask&^1 == 0
	}
	if e.NumRails > MaxRails || e.UpMask>>e.NumRails != 0 {
		return ms, 0, 0, false
	}
	if e.UniqueID != ([6]byte{}) && e.UniqueID != e.MACs[0] {
		return ms, 0, 0, false
	}
	return e.MACs, int(e.NumRails), e.UpMask, true
}

// EncodedLen returns the number of bytes the entry occupies in a Config body.
// Mappers use it to split the host table into frames that fit the MTU.
func (e *ConfigEntry) EncodedLen() int {
	n := int(e.NumRails)
	if n == 0 {
		n = 1
	}
	return ConfigEntryLen + ConfigRailLen*n + len(e.Name)
}

// AppendConfig appends a Config body to b: the fields of h, Count =
// len(entries), then the entries. It returns ErrName, and b unchanged, if a
// name is invalid, and ErrBody if there are more than 65535 entries,
// First+Count exceeds TotalHosts, or an entry's rails are inconsistent
// (more than MaxRails, an up bit beyond them, UniqueID set and not
// MACs[0]). It does not allocate when cap(b) suffices.
func AppendConfig(b []byte, h *ConfigHeader, entries []ConfigEntry) ([]byte, error) {
	size := ConfigLen
	for i := range entries {
		if !validName(entries[i].Name) {
			return b, ErrName
		}
		if _, _, _, ok := entries[i].macs(); !ok {
			return b, ErrBody
		}
		size += entries[i].EncodedLen()
	}
	if len(entries) > 0xFFFF || int(h.First)+len(entries) > int(h.TotalHosts) {
		return b, ErrBody
	}
	n := len(b)
	b = grow(b, size)
	e := b[n:]
	e[0] = MapperRev
	e[1] = uint8(h.Flags)
	binary.BigEndian.PutUint16(e[2:], h.TotalHosts)
	binary.BigEndian.PutUint32(e[4:], h.MapVersion)
	copy(e[8:14], h.MapperID[:])
	binary.BigEndian.PutUint16(e[14:], h.First)
	binary.BigEndian.PutUint16(e[16:], uint16(len(entries)))
	binary.BigEndian.PutUint16(e[18:], 0)
	off := ConfigLen
	for i := range entries {
		en := &entries[i]
		ms, nr, up, _ := en.macs()
		binary.BigEndian.PutUint32(e[off:], en.NodeID)
		e[off+4] = uint8(en.Flags)
		e[off+5] = uint8(nr)
		e[off+6] = up
		e[off+7] = uint8(len(en.Name))
		off += ConfigEntryLen
		for r := range nr {
			copy(e[off:off+6], ms[r][:])
			e[off+6] = en.Seen[r]
			e[off+7] = 0
			off += ConfigRailLen
		}
		off += copy(e[off:], en.Name)
	}
	return b, nil
}

// Config is a parsed CONFIG payload: the fixed fields and a view of the
// entries, which alias the input. Wire layout (big-endian):
//
//	revision u8 | flags u8 | total hosts u16 | map version u32 |
//	mapper unique id [6] | first entry index u16 |
//	entry count u16 | reserved u16 | entries
type Config struct {
	ConfigHeader
	// Count is the number of entries in this frame.
	Count uint16
	// entries holds exactly the Count validated entries.
	entries []byte
}

// ParseConfig parses a CONFIG payload. It returns ErrMapperRev if the
// body's revision is not MapperRev. It validates every entry: the body must
// hold exactly Count entries, every name must be valid, every entry must
// have 1..MaxRails MACs and no up bit beyond them, and First+Count must not
// exceed TotalHosts; otherwise it returns ErrBody. It does not allocate.
func ParseConfig(body []byte) (Config, error) {
	if len(body) < ConfigLen {
		return Config{}, ErrBody
	}
	if body[0] != MapperRev {
		return Config{}, ErrMapperRev
	}
	c := Config{
		ConfigHeader: ConfigHeader{
			Flags:      ConfigFlags(body[1]),
			TotalHosts: binary.BigEndian.Uint16(body[2:]),
			MapVersion: binary.BigEndian.Uint32(body[4:]),
			MapperID:   [6]byte(body[8:14]),
			First:      binary.BigEndian.Uint16(body[14:]),
		},
		Count: binary.BigEndian.Uint16(body[16:]),
	}
	if int(c.First)+int(c.Count) > int(c.TotalHosts) {
		return Config{}, ErrBody
	}
	rest := body[ConfigLen:]
	off := 0
	for range int(c.Count) {
		end, ok := entryEnd(rest[off:])
		if !ok {
			return Config{}, ErrBody
		}
		off += end
	}
	if off != len(rest) {
		return Config{}, ErrBody
	}
	c.entries = rest
	return c, nil
}

// entryEnd validates the entry at the start of b and returns its length.
func entryEnd(b []byte) (int, bool) {
	if len(b) < ConfigEntryLen {
		return 0, false
	}
	nr, up, nl := int(b[5]), b[6], int(b[7])
	if nr < 1 || nr > MaxRails || up>>nr != 0 {
		return 0, false
	}
	end := ConfigEntryLen + ConfigRailLen*nr + nl
	if end > len(b) || !validName(b[end-nl:end]) {
		return 0, false
	}
	return end, true
}

// Entries returns an iterator over the entries of c, positioned before the
// first one.
func (c *Config) Entries() ConfigIter { return ConfigIter{b: c.entries} }

// All returns an iterator over the entries of c and their indexes in the
// whole host table (First, First+1, ...), for use with range.
func (c *Config) All() iter.Seq2[int, ConfigEntry] {
	return func(yield func(int, ConfigEntry) bool) {
		it := c.Entries()
		for i := int(c.First); ; i++ {
			e, ok := it.Next()
			if !ok || !yield(i, e) {
				return
			}
		}
	}
}

// Entry returns the i-th entry of this frame (0 <= i < Count) and true, or a
// zero entry and false if i is out of range. It walks the entries from the
// start, so iterate with Entries or All to visit all of them.
func (c *Config) Entry(i int) (ConfigEntry, bool) {
	if i < 0 || i >= int(c.Count) {
		return ConfigEntry{}, false
	}
	it := c.Entries()
	for ; i > 0; i-- {
		it.Next()
	}
	return it.Next()
}

// ConfigIter walks the entries of a parsed Config without allocating. The
// zero value has no entries.
type ConfigIter struct {
	b []byte
}

// Next returns the next entry and true, or a zero entry and false when there
// are no more. The entry's Name aliases the frame.
func (it *ConfigIter) Next() (ConfigEntry, bool) {
	// ParseConfig validated the entries; entryEnd only keeps a zero or
	// exhausted iterator safe.
	end, ok := entryEnd(it.b)
	if !ok {
		return ConfigEntry{}, false
	}
	b := it.b
	e := ConfigEntry{
		NodeID:   binary.BigEndian.Uint32(b[0:]),
		Flags:    EntryFlags(b[4]),
		NumRails: b[5],
		UpMask:   b[6],
	}
	nr := int(b[5])
	for r := range nr {
		rb := b[ConfigEntryLen+ConfigRailLen*r:]
		e.MACs[r] = [6]byte(rb)
		e.Seen[r] = rb[6]
	}
	e.UniqueID = e.MACs[0]
	e.Name = b[ConfigEntryLen+ConfigRailLen*nr : end : end]
	it.b = b[end:]
	return e, true
}

// ConfigAck is the body of a CONFIG_ACK frame, sent by a host to the mapper
// after installing a map (or receiving a handed-over table, ConfigTable).
// Wire layout (big-endian):
//
//	revision u8 | flags u8 | unique id [6] | map version u32 | node id u32
type ConfigAck struct {
	// Flags are the flags of the CONFIG acknowledged (ConfigTable for a
	// table hand-over).
	Flags ConfigFlags
	// MapVersion is the map version the host installed.
	MapVersion uint32
	// UniqueID is the acknowledging host's unique id (MAC address).
	UniqueID [6]byte
	// NodeID is the node id the host took from that map.
	NodeID uint32
}

// AppendConfigAck appends the ConfigAck body of a to b. It does not allocate
// when cap(b) suffices.
func AppendConfigAck(b []byte, a *ConfigAck) []byte {
	n := len(b)
	b = grow(b, ConfigAckLen)
	e := b[n:]
	e[0] = MapperRev
	e[1] = uint8(a.Flags)
	copy(e[2:8], a.UniqueID[:])
	binary.BigEndian.PutUint32(e[8:], a.MapVersion)
	binary.BigEndian.PutUint32(e[12:], a.NodeID)
	return b
}

// ParseConfigAck parses a CONFIG_ACK payload, which must be exactly
// ConfigAckLen bytes (else ErrBody) of revision MapperRev (else
// ErrMapperRev).
func ParseConfigAck(body []byte) (ConfigAck, error) {
	if len(body) != ConfigAckLen {
		return ConfigAck{}, ErrBody
	}
	if body[0] != MapperRev {
		return ConfigAck{}, ErrMapperRev
	}
	return ConfigAck{
		Flags:      ConfigFlags(body[1]),
		UniqueID:   [6]byte(body[2:8]),
		MapVersion: binary.BigEndian.Uint32(body[8:]),
		NodeID:     binary.BigEndian.Uint32(body[12:]),
	}, nil
}

// validName reports whether name is a valid host name: at most
// MaxHostNameLen bytes and no NUL.
func validName(name []byte) bool {
	return len(name) <= MaxHostNameLen && bytes.IndexByte(name, 0) < 0
}
