package wire

import (
	"bytes"
	"encoding/binary"
	"iter"
)

// Mapper body constants.
const (
	// MaxHostNameLen is the longest host name a mapper body may carry
	// (GM_MAX_HOST_NAME_LEN). Names contain no NUL byte.
	MaxHostNameLen = 128
	// HostInfoLen is the length of the fixed part of a HostInfo body (SCOUT
	// and SCOUT_REPLY payloads), before the host name.
	HostInfoLen = 22
	// ConfigLen is the length of the fixed part of a Config body (CONFIG
	// payload), before the entries.
	ConfigLen = 16
	// ConfigEntryLen is the length of the fixed part of one Config entry,
	// before its host name.
	ConfigEntryLen = 12
	// ConfigAckLen is the length of a ConfigAck body (CONFIG_ACK payload).
	ConfigAckLen = 14
	// NodeNone is the node id of a host that has not been assigned one.
	NodeNone uint32 = 0
)

// HostInfo is the body of SCOUT and SCOUT_REPLY frames: a host's identity as
// seen by the mapper. Wire layout (big-endian):
//
//	unique id [6] | level u8 | name length u8 | map version u32 |
//	mapper unique id [6] | node id u32 | name [name length]
type HostInfo struct {
	// UniqueID is the sending host's unique id: the MAC address of the
	// interface the frame was sent on.
	UniqueID [6]byte
	// Level is the sender's mapper level: 0 for a host without a mapper,
	// higher for a mapper daemon. Among competing mappers the one with the
	// highest (Level, UniqueID) is in charge.
	Level uint8
	// MapVersion is the version of the map the sender holds (a SCOUT: the
	// map it is building or distributing), 0 if none.
	MapVersion uint32
	// MapperID is the unique id of the mapper whose map the sender holds
	// (for a SCOUT: the mapper itself), all zero if none.
	MapperID [6]byte
	// NodeID is the node id the sender was assigned, NodeNone (0) if none.
	NodeID uint32
	// Name is the host name, at most MaxHostNameLen bytes, no NUL. After
	// ParseHostInfo it aliases the input.
	Name []byte
}

// AppendHostInfo appends the HostInfo body of h to b. It returns ErrName,
// and b unchanged, if h.Name is too long or contains a NUL byte. It does not
// allocate when cap(b) suffices.
func AppendHostInfo(b []byte, h *HostInfo) ([]byte, error) {
	if !validName(h.Name) {
		return b, ErrName
	}
	n := len(b)
	b = grow(b, HostInfoLen+len(h.Name))
	e := b[n:]
	copy(e[0:6], h.UniqueID[:])
	e[6] = h.Level
	e[7] = uint8(len(h.Name))
	binary.BigEndian.PutUint32(e[8:], h.MapVersion)
	copy(e[12:18], h.MapperID[:])
	binary.BigEndian.PutUint32(e[18:], h.NodeID)
	copy(e[HostInfoLen:], h.Name)
	return b, nil
}

// ParseHostInfo parses a SCOUT or SCOUT_REPLY payload. The body must be
// exactly HostInfoLen bytes plus the name; otherwise, or if the name is
// invalid, it returns ErrBody. The returned Name aliases body. It does not
// allocate.
func ParseHostInfo(body []byte) (HostInfo, error) {
	if len(body) < HostInfoLen {
		return HostInfo{}, ErrBody
	}
	nl := int(body[7])
	if len(body) != HostInfoLen+nl {
		return HostInfo{}, ErrBody
	}
	name := body[HostInfoLen : HostInfoLen+nl : HostInfoLen+nl]
	if !validName(name) {
		return HostInfo{}, ErrBody
	}
	return HostInfo{
		UniqueID:   [6]byte(body[0:6]),
		Level:      body[6],
		MapVersion: binary.BigEndian.Uint32(body[8:]),
		MapperID:   [6]byte(body[12:18]),
		NodeID:     binary.BigEndian.Uint32(body[18:]),
		Name:       name,
	}, nil
}

// ConfigHeader holds the fixed fields of a Config body that a mapper chooses.
type ConfigHeader struct {
	// MapVersion is the version of the map; a host installs a map only if
	// its version is newer than the one it holds from the same mapper.
	MapVersion uint32
	// MapperID is the unique id (MAC) of the mapper that computed the map.
	MapperID [6]byte
	// TotalHosts is the number of entries in the whole host table.
	TotalHosts uint16
	// First is the index in the host table of this frame's first entry.
	First uint16
}

// ConfigEntry is one row of the host table: a host's node id, unique id and
// name. Wire layout: node id u32 | unique id [6] | name length u8 |
// reserved u8 (0) | name [name length].
type ConfigEntry struct {
	// NodeID is the node id the mapper assigned to the host (never 0).
	NodeID uint32
	// UniqueID is the host's unique id (MAC address).
	UniqueID [6]byte
	// Name is the host name, at most MaxHostNameLen bytes, no NUL. In
	// entries from a parsed Config it aliases the frame.
	Name []byte
}

// EncodedLen returns the number of bytes the entry occupies in a Config body.
// Mappers use it to split the host table into frames that fit the MTU.
func (e *ConfigEntry) EncodedLen() int { return ConfigEntryLen + len(e.Name) }

// AppendConfig appends a Config body to b: the fields of h, Count =
// len(entries), then the entries. It returns ErrName, and b unchanged, if a
// name is invalid, and ErrBody if there are more than 65535 entries or
// First+Count exceeds TotalHosts. It does not allocate when cap(b) suffices.
func AppendConfig(b []byte, h *ConfigHeader, entries []ConfigEntry) ([]byte, error) {
	size := ConfigLen
	for i := range entries {
		if !validName(entries[i].Name) {
			return b, ErrName
		}
		size += entries[i].EncodedLen()
	}
	if len(entries) > 0xFFFF || int(h.First)+len(entries) > int(h.TotalHosts) {
		return b, ErrBody
	}
	n := len(b)
	b = grow(b, size)
	e := b[n:]
	binary.BigEndian.PutUint32(e[0:], h.MapVersion)
	copy(e[4:10], h.MapperID[:])
	binary.BigEndian.PutUint16(e[10:], h.TotalHosts)
	binary.BigEndian.PutUint16(e[12:], h.First)
	binary.BigEndian.PutUint16(e[14:], uint16(len(entries)))
	off := ConfigLen
	for i := range entries {
		en := &entries[i]
		binary.BigEndian.PutUint32(e[off:], en.NodeID)
		copy(e[off+4:off+10], en.UniqueID[:])
		e[off+10] = uint8(len(en.Name))
		e[off+11] = 0
		copy(e[off+ConfigEntryLen:], en.Name)
		off += en.EncodedLen()
	}
	return b, nil
}

// Config is a parsed CONFIG payload: the fixed fields and a view of the
// entries, which alias the input. Wire layout (big-endian):
//
//	map version u32 | mapper unique id [6] | total hosts u16 |
//	first entry index u16 | entry count u16 | entries
type Config struct {
	ConfigHeader
	// Count is the number of entries in this frame.
	Count uint16
	// entries holds exactly the Count validated entries.
	entries []byte
}

// ParseConfig parses a CONFIG payload. It validates every entry: the body
// must hold exactly Count entries, every name must be valid, and First+Count
// must not exceed TotalHosts; otherwise it returns ErrBody. It does not
// allocate.
func ParseConfig(body []byte) (Config, error) {
	if len(body) < ConfigLen {
		return Config{}, ErrBody
	}
	c := Config{
		ConfigHeader: ConfigHeader{
			MapVersion: binary.BigEndian.Uint32(body[0:]),
			MapperID:   [6]byte(body[4:10]),
			TotalHosts: binary.BigEndian.Uint16(body[10:]),
			First:      binary.BigEndian.Uint16(body[12:]),
		},
		Count: binary.BigEndian.Uint16(body[14:]),
	}
	if int(c.First)+int(c.Count) > int(c.TotalHosts) {
		return Config{}, ErrBody
	}
	rest := body[ConfigLen:]
	off := 0
	for range int(c.Count) {
		if len(rest)-off < ConfigEntryLen {
			return Config{}, ErrBody
		}
		nl := int(rest[off+10])
		end := off + ConfigEntryLen + nl
		if end > len(rest) || !validName(rest[off+ConfigEntryLen:end]) {
			return Config{}, ErrBody
		}
		off = end
	}
	if off != len(rest) {
		return Config{}, ErrBody
	}
	c.entries = rest
	return c, nil
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
	// ParseConfig validated the entries; the checks below only keep a zero
	// or exhausted iterator safe.
	if len(it.b) < ConfigEntryLen {
		return ConfigEntry{}, false
	}
	end := ConfigEntryLen + int(it.b[10])
	if end > len(it.b) {
		return ConfigEntry{}, false
	}
	e := ConfigEntry{
		NodeID:   binary.BigEndian.Uint32(it.b[0:]),
		UniqueID: [6]byte(it.b[4:10]),
		Name:     it.b[ConfigEntryLen:end:end],
	}
	it.b = it.b[end:]
	return e, true
}

// ConfigAck is the body of a CONFIG_ACK frame, sent by a host to the mapper
// after installing a map. Wire layout (big-endian):
//
//	map version u32 | unique id [6] | node id u32
type ConfigAck struct {
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
	binary.BigEndian.PutUint32(e[0:], a.MapVersion)
	copy(e[4:10], a.UniqueID[:])
	binary.BigEndian.PutUint32(e[10:], a.NodeID)
	return b
}

// ParseConfigAck parses a CONFIG_ACK payload, which must be exactly
// ConfigAckLen bytes; otherwise it returns ErrBody.
func ParseConfigAck(body []byte) (ConfigAck, error) {
	if len(body) != ConfigAckLen {
		return ConfigAck{}, ErrBody
	}
	return ConfigAck{
		MapVersion: binary.BigEndian.Uint32(body[0:]),
		UniqueID:   [6]byte(body[4:10]),
		NodeID:     binary.BigEndian.Uint32(body[10:]),
	}, nil
}

// validName reports whether name is a valid host name: at most
// MaxHostNameLen bytes and no NUL.
func validName(name []byte) bool {
	return len(name) <= MaxHostNameLen && bytes.IndexByte(name, 0) < 0
}
