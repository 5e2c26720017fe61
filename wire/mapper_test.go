package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var (
	macA1     = [6]byte{2, 0, 0, 0, 1, 1}
	macC      = [6]byte{2, 0, 0, 0, 0, 3}
	scoutInfo = HostInfo{
		Flags: HostLeader | HostConfigured, UniqueID: macA, Level: 1, MapVersion: 3, MapperID: macA, NodeID: 1,
		NumRails: 2, Rails: [MaxRails]HostRail{{macA, RailUp | RailHearing}, {macA1, RailUp}},
		Name: []byte("node0"),
	}
	// scoutHex pins a whole SCOUT frame (docs/PROTOCOL.md §17.6): broadcast
	// from macA, mapper port 1 to mapper port 1, carrying scoutInfo.
	scoutHex = "ffffffffffff" + "020000000001" + "88b5" +
		"01" + "20" + "01" + "01" + "0000" + "00" + "00" +
		"00000000" + "00000001" + "00000000" + "00000005" + "00000000" +
		"00000029" + "00000000" + "0029" + "0000" + "492ca5e6" +
		"02" + "06" + "01" + "05" + "00000003" + "00000001" + "020000000001" + "02" + "00" +
		"020000000001" + "03" + "00" + "020000000101" + "01" + "00" + "6e6f646530"
)

func TestGoldenScout(t *testing.T) {
	body, err := AppendHostInfo(nil, &scoutInfo)
	if err != nil {
		t.Fatal(err)
	}
	f := HeaderFields{Type: TypeScout, TargetPort: 1, SourcePort: 1, SourceNode: 1, Seq: 5, MsgLen: uint32(len(body))}
	got := AppendFrame(nil, Broadcast, macA, EtherType, &f, body)
	want, _ := hex.DecodeString(scoutHex)
	if !bytes.Equal(got, want) {
		t.Fatalf("SCOUT frame:\n got %x\nwant %x", got, want)
	}
	h, err := ParseFrameCRC(want, EtherType)
	if err != nil {
		t.Fatal(err)
	}
	if h.CRC() != 0x492ca5e6 || refCRC32C(want[14:54], want[58:]) != h.CRC() {
		t.Fatalf("CRC %08x", h.CRC())
	}
	hi, err := ParseHostInfo(h.Payload())
	if err != nil {
		t.Fatal(err)
	}
	if !equalHostInfo(hi, scoutInfo) {
		t.Fatalf("ParseHostInfo = %+v", hi)
	}
}

func equalHostInfo(a, b HostInfo) bool {
	return a.Flags == b.Flags && a.UniqueID == b.UniqueID && a.Level == b.Level && a.MapVersion == b.MapVersion &&
		a.MapperID == b.MapperID && a.NodeID == b.NodeID && a.NumRails == b.NumRails && a.Rails == b.Rails &&
		bytes.Equal(a.Name, b.Name)
}

func TestHostInfo(t *testing.T) {
	long := bytes.Repeat([]byte{'h'}, MaxHostNameLen)
	eight := HostInfo{NumRails: MaxRails}
	for i := range eight.Rails {
		eight.Rails[i] = HostRail{MAC: [6]byte{2, 0, 0, 0, 9, byte(i)}, State: RailState(i)}
	}
	eight.UniqueID = eight.Rails[0].MAC
	tests := []struct {
		name  string
		h     HostInfo
		rails int // encoded rails
		err   error
	}{
		{"one rail by default", HostInfo{UniqueID: macB}, 1, nil},
		{"all fields", HostInfo{Flags: HostHello | 0x80, UniqueID: [6]byte{1, 2, 3, 4, 5, 6}, Level: 255,
			MapVersion: 0xdeadbeef, MapperID: [6]byte{7, 8, 9, 10, 11, 12}, NodeID: 0x01020304,
			NumRails: 1, Rails: [MaxRails]HostRail{{[6]byte{1, 2, 3, 4, 5, 6}, RailUp}}, Name: []byte("host.example")}, 1, nil},
		{"eight rails", eight, 8, nil},
		{"max name", HostInfo{Name: long}, 1, nil},
		{"name too long", HostInfo{Name: append(long, 'x')}, 0, ErrName},
		{"NUL in name", HostInfo{Name: []byte("a\x00b")}, 0, ErrName},
		{"nine rails", HostInfo{NumRails: 9}, 0, ErrBody},
		{"unique id is not rail 0", HostInfo{UniqueID: macA, NumRails: 1, Rails: [MaxRails]HostRail{{MAC: macB}}}, 0, ErrBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pre := []byte{0xaa}
			b, err := AppendHostInfo(pre, &tt.h)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("AppendHostInfo error %v, want %v", err, tt.err)
			}
			if err != nil {
				if len(b) != 1 {
					t.Fatal("appended despite error")
				}
				return
			}
			body := b[1:]
			if len(body) != HostInfoLen+tt.rails*HostRailLen+len(tt.h.Name) {
				t.Fatalf("len %d", len(body))
			}
			got, err := ParseHostInfo(body)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.h
			if want.NumRails == 0 {
				want.NumRails, want.Rails[0] = 1, HostRail{MAC: want.UniqueID, State: RailUp}
			}
			if !equalHostInfo(got, want) {
				t.Fatalf("round trip %+v, want %+v", got, want)
			}
		})
	}
	// Field offsets.
	b, _ := AppendHostInfo(nil, &tests[1].h)
	want := "02" + "81" + "ff" + "0c" + "deadbeef" + "01020304" + "0708090a0b0c" + "01" + "00" +
		"010203040506" + "01" + "00" + hex.EncodeToString([]byte("host.example"))
	if hex.EncodeToString(b) != want {
		t.Fatalf("HostInfo bytes %x, want %s", b, want)
	}
}

func TestParseHostInfoErrors(t *testing.T) {
	good, _ := AppendHostInfo(nil, &scoutInfo)
	mod := func(fn func([]byte) []byte) []byte { return fn(append([]byte(nil), good...)) }
	nameOff := HostInfoLen + 2*HostRailLen
	tests := []struct {
		name string
		b    []byte
		err  error
	}{
		{"nil", nil, ErrBody},
		{"short fixed", good[:HostInfoLen-1], ErrBody},
		{"name cut", good[:len(good)-1], ErrBody},
		{"trailing byte", append(append([]byte(nil), good...), 'x'), ErrBody},
		{"name length too big", mod(func(b []byte) []byte { b[3] = 200; return append(b, make([]byte, 195)...) }), ErrBody},
		{"NUL in name", mod(func(b []byte) []byte { b[nameOff] = 0; return b }), ErrBody},
		{"no rails", mod(func(b []byte) []byte { b[18] = 0; return b }), ErrBody},
		{"nine rails", mod(func(b []byte) []byte { b[18] = 9; return append(b, make([]byte, 7*HostRailLen)...) }), ErrBody},
		{"rail count too big", mod(func(b []byte) []byte { b[18] = 3; return b }), ErrBody},
		{"revision 0", mod(func(b []byte) []byte { b[0] = 0; return b }), ErrMapperRev},
		{"revision 1", mod(func(b []byte) []byte { b[0] = 1; return b }), ErrMapperRev},
	}
	for _, tt := range tests {
		if _, err := ParseHostInfo(tt.b); !errors.Is(err, tt.err) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.err)
		}
	}
}

func testEntries(n int) []ConfigEntry {
	es := make([]ConfigEntry, n)
	for i := range es {
		es[i] = ConfigEntry{
			NodeID:   uint32(i + 1),
			UniqueID: [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)},
			Name:     []byte(strings.Repeat("n", i%5) + string(rune('a'+i%26))),
		}
		if i%3 == 1 {
			es[i].NumRails, es[i].UpMask, es[i].Seen = 2, 2, [MaxRails]uint8{1, 2}
			es[i].MACs[0] = es[i].UniqueID
			es[i].MACs[1] = [6]byte{2, 0, 0, 1, byte(i >> 8), byte(i)}
		}
		if i%7 == 6 {
			es[i].Flags = EntryAbsent
		}
	}
	return es
}

// normEntry applies the NumRails == 0 default of AppendConfig.
func normEntry(e ConfigEntry) ConfigEntry {
	if e.NumRails == 0 {
		e.NumRails, e.UpMask, e.MACs[0] = 1, 1, e.UniqueID
	}
	return e
}

func equalEntry(a, b ConfigEntry) bool {
	a, b = normEntry(a), normEntry(b)
	return a.NodeID == b.NodeID && a.Flags == b.Flags && a.UniqueID == b.UniqueID && a.NumRails == b.NumRails &&
		a.UpMask == b.UpMask && a.MACs == b.MACs && a.Seen == b.Seen && bytes.Equal(a.Name, b.Name)
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		h       ConfigHeader
		entries []ConfigEntry
		err     error
	}{
		{"empty map", ConfigHeader{MapVersion: 1, MapperID: macA}, nil, nil},
		{"one", ConfigHeader{MapVersion: 2, MapperID: macA, TotalHosts: 1}, testEntries(1), nil},
		{"slice of larger map", ConfigHeader{MapVersion: 7, MapperID: macB, TotalHosts: 100, First: 90}, testEntries(10), nil},
		{"table hand-over", ConfigHeader{Flags: ConfigTable, MapVersion: 7, MapperID: macB, TotalHosts: 10}, testEntries(10), nil},
		{"empty name entry", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{NodeID: 5}}, nil},
		{"range beyond total", ConfigHeader{TotalHosts: 5, First: 1}, testEntries(5), ErrBody},
		{"bad name", ConfigHeader{TotalHosts: 2}, []ConfigEntry{{NodeID: 1}, {NodeID: 2, Name: []byte{0}}}, ErrName},
		{"long name", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{Name: make([]byte, 129)}}, ErrName},
		{"up bit beyond rails", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{NumRails: 2, UpMask: 4}}, ErrBody},
		{"nine rails", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{NumRails: 9}}, ErrBody},
		{"unique id is not MACs[0]", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{UniqueID: macA, NumRails: 1}}, ErrBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendConfig([]byte{0xaa}, &tt.h, tt.entries)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("AppendConfig error %v, want %v", err, tt.err)
			}
			if err != nil {
				if len(b) != 1 {
					t.Fatal("appended despite error")
				}
				return
			}
			body := b[1:]
			size := ConfigLen
			for i := range tt.entries {
				size += tt.entries[i].EncodedLen()
			}
			if len(body) != size {
				t.Fatalf("body length %d, want %d", len(body), size)
			}
			c, err := ParseConfig(body)
			if err != nil {
				t.Fatal(err)
			}
			if c.ConfigHeader != tt.h || int(c.Count) != len(tt.entries) {
				t.Fatalf("header %+v count %d", c.ConfigHeader, c.Count)
			}
			it := c.Entries()
			for i, want := range tt.entries {
				got, ok := it.Next()
				if !ok || !equalEntry(got, want) {
					t.Fatalf("Next %d = %+v %v, want %+v", i, got, ok, want)
				}
				if e, ok := c.Entry(i); !ok || !equalEntry(e, want) {
					t.Fatalf("Entry(%d) = %+v %v", i, e, ok)
				}
			}
			if _, ok := it.Next(); ok {
				t.Fatal("extra entry")
			}
			if _, ok := c.Entry(len(tt.entries)); ok {
				t.Fatal("Entry past end")
			}
			if _, ok := c.Entry(-1); ok {
				t.Fatal("Entry(-1)")
			}
			n := 0
			for idx, e := range c.All() {
				if idx != int(tt.h.First)+n || !equalEntry(e, tt.entries[n]) {
					t.Fatalf("All: %d %+v", idx, e)
				}
				n++
			}
			if n != len(tt.entries) {
				t.Fatalf("All visited %d", n)
			}
			for range c.All() {
				break // early stop must be honoured
			}
		})
	}
	// Pinned bytes of a one-entry body.
	b, _ := AppendConfig(nil, &ConfigHeader{Flags: ConfigTable, MapVersion: 0x01020304, MapperID: macA, TotalHosts: 2, First: 1},
		[]ConfigEntry{{NodeID: 2, Flags: EntryAbsent, UniqueID: macB, NumRails: 2, UpMask: 2,
			MACs: [MaxRails][6]byte{macB, macC}, Seen: [MaxRails]uint8{0, 3}, Name: []byte("node1")}})
	want := "02" + "01" + "0002" + "01020304" + "020000000001" + "0001" + "0001" + "0000" +
		"00000002" + "01" + "02" + "02" + "05" + "020000000002" + "0000" + "020000000003" + "0300" + "6e6f646531"
	if hex.EncodeToString(b) != want {
		t.Fatalf("Config bytes %x, want %s", b, want)
	}
	var zero ConfigIter
	if _, ok := zero.Next(); ok {
		t.Fatal("zero ConfigIter has an entry")
	}
}

func TestParseConfigErrors(t *testing.T) {
	good, err := AppendConfig(nil, &ConfigHeader{MapVersion: 1, TotalHosts: 3}, testEntries(3))
	if err != nil {
		t.Fatal(err)
	}
	mod := func(fn func([]byte) []byte) []byte { return fn(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		b    []byte
		err  error
	}{
		{"nil", nil, ErrBody},
		{"short fixed", good[:ConfigLen-1], ErrBody},
		{"entry cut", good[:len(good)-1], ErrBody},
		{"entry fixed part cut", good[:ConfigLen+5], ErrBody},
		{"trailing byte", append(append([]byte(nil), good...), 'x'), ErrBody},
		{"count too big", mod(func(b []byte) []byte { b[17] = 4; b[3] = 9; return b }), ErrBody},
		{"count too small", mod(func(b []byte) []byte { b[17] = 2; return b }), ErrBody},
		{"first+count > total", mod(func(b []byte) []byte { b[15] = 1; return b }), ErrBody},
		{"no rails", mod(func(b []byte) []byte { b[ConfigLen+5] = 0; return b }), ErrBody},
		{"up bit beyond rails", mod(func(b []byte) []byte { b[ConfigLen+6] = 2; return b }), ErrBody},
		{"name length too big", mod(func(b []byte) []byte { b[ConfigLen+7] = 0xff; return b }), ErrBody},
		{"NUL in name", mod(func(b []byte) []byte { b[ConfigLen+ConfigEntryLen+ConfigRailLen] = 0; return b }), ErrBody},
		{"revision 0", mod(func(b []byte) []byte { b[0] = 0; return b }), ErrMapperRev},
	}
	for _, tt := range tests {
		want := tt.err
		if want == nil {
			want = ErrBody
		}
		if _, err := ParseConfig(tt.b); !errors.Is(err, want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, want)
		}
	}
	// The reserved field of the fixed part is ignored.
	r := mod(func(b []byte) []byte { b[18] = 0x5a; return b })
	if _, err := ParseConfig(r); err != nil {
		t.Errorf("reserved field: %v", err)
	}
}

func TestConfigAck(t *testing.T) {
	a := ConfigAck{Flags: ConfigTable, MapVersion: 0x0a0b0c0d, UniqueID: macB, NodeID: 0x11223344}
	b := AppendConfigAck([]byte{1}, &a)
	if hex.EncodeToString(b[1:]) != "02"+"01"+"020000000002"+"0a0b0c0d"+"11223344" {
		t.Fatalf("ConfigAck bytes %x", b[1:])
	}
	got, err := ParseConfigAck(b[1:])
	if err != nil || got != a {
		t.Fatalf("ParseConfigAck = %+v, %v", got, err)
	}
	for _, n := range []int{0, ConfigAckLen - 1, ConfigAckLen + 1} {
		if _, err := ParseConfigAck(make([]byte, n)); !errors.Is(err, ErrBody) {
			t.Errorf("len %d: %v", n, err)
		}
	}
	if _, err := ParseConfigAck(make([]byte, ConfigAckLen)); !errors.Is(err, ErrMapperRev) {
		t.Errorf("revision 0: %v", err)
	}
}

// TestGoldenDocVectors pins the GET, CONFIG and CONFIG_ACK example frames
// quoted in docs/PROTOCOL.md.
func TestGoldenDocVectors(t *testing.T) {
	body, err := AppendConfig(nil, &ConfigHeader{MapVersion: 3, MapperID: macA, TotalHosts: 3}, []ConfigEntry{
		{NodeID: 1, UniqueID: macA, NumRails: 2, UpMask: 3, MACs: [MaxRails][6]byte{macA, macA1}, Seen: [MaxRails]uint8{1, 2}, Name: []byte("node0")},
		{NodeID: 2, UniqueID: macB, Seen: [MaxRails]uint8{1}, Name: []byte("node1")},
		{NodeID: 3, Flags: EntryAbsent, NumRails: 1, MACs: [MaxRails][6]byte{macC}, Name: []byte("node2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ack := AppendConfigAck(nil, &ConfigAck{MapVersion: 3, UniqueID: macB, NodeID: 2})
	tests := []struct {
		name  string
		frame []byte
		crc   uint32
		hex   string
	}{
		{"GET", AppendFrame(nil, macB, macA, EtherType, &HeaderFields{Type: TypeGet, TargetPort: 4, SourcePort: 2,
			TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 10, MsgLen: 4096, RemoteAddr: 0x0000010000002000},
			[]byte{0, 0, 0, 2, 0, 0, 0, 0x40}), 0x2c70bb2f,
			"02000000000202000000000188b501080402000000000000000200000001010203040000000a0000000000001000000000000008" +
				"00002c70bb2f00000100000020000000000200000040"},
		{"CONFIG", AppendFrame(nil, macB, macA, EtherType, &HeaderFields{Type: TypeConfig, TargetPort: 1, SourcePort: 1,
			SourceNode: 1, Seq: 6, MsgLen: uint32(len(body))}, body), configCRC,
			"02000000000202000000000188b5" + "01220101" + "00000000" + "00000000" + "00000001" +
				"00000000" + "00000006" + "00000000" + "0000005b" + "00000000" + "005b" + "0000" + configCRCHex +
				"02" + "00" + "0003" + "00000003" + "020000000001" + "0000" + "0003" + "0000" +
				"00000001" + "00" + "02" + "03" + "05" + "020000000001" + "0100" + "020000000101" + "0200" + "6e6f646530" +
				"00000002" + "00" + "01" + "01" + "05" + "020000000002" + "0100" + "6e6f646531" +
				"00000003" + "01" + "01" + "00" + "05" + "020000000003" + "0000" + "6e6f646532"},
		{"CONFIG_ACK", AppendFrame(nil, macA, macB, EtherType, &HeaderFields{Type: TypeConfigAck, TargetPort: 1, SourcePort: 1,
			TargetNode: 1, SourceNode: 2, Seq: 6, MsgLen: uint32(len(ack))}, ack), ackCRC,
			"02000000000102000000000288b5" + "01230101" + "00000000" + "00000001" + "00000002" +
				"00000000" + "00000006" + "00000000" + "00000010" + "00000000" + "0010" + "0000" + ackCRCHex +
				"02" + "00" + "020000000002" + "00000003" + "00000002"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(tt.frame); got != tt.hex {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.hex)
		}
		h, err := ParseFrameCRC(tt.frame, EtherType)
		if err != nil || h.CRC() != tt.crc || refCRC32C(tt.frame[14:54], tt.frame[58:]) != tt.crc {
			t.Errorf("%s: %v crc %08x", tt.name, err, h.CRC())
		}
	}
}

const (
	configCRC    = 0x4e31590f
	configCRCHex = "4e31590f"
	ackCRC       = 0x9534e6b2
	ackCRCHex    = "9534e6b2"
)
