package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var (
	scoutInfo = HostInfo{
		UniqueID: macA, Level: 1, MapVersion: 3, MapperID: macA, NodeID: 1, Name: []byte("node0"),
	}
	// scoutHex pins a whole SCOUT frame: broadcast from macA, mapper port 1
	// to mapper port 1, carrying scoutInfo.
	scoutHex = "ffffffffffff" + "020000000001" + "88b5" +
		"01" + "20" + "01" + "01" + "0000" + "00" + "00" +
		"00000000" + "00000001" + "00000000" + "00000005" + "00000000" +
		"0000001b" + "00000000" + "001b" + "0000" + "6fd49637" +
		"020000000001" + "01" + "05" + "00000003" + "020000000001" + "00000001" + "6e6f646530"
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
	if h.CRC() != 0x6fd49637 || refCRC32C(want[14:54], want[58:]) != h.CRC() {
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
	return a.UniqueID == b.UniqueID && a.Level == b.Level && a.MapVersion == b.MapVersion &&
		a.MapperID == b.MapperID && a.NodeID == b.NodeID && bytes.Equal(a.Name, b.Name)
}

func TestHostInfo(t *testing.T) {
	long := bytes.Repeat([]byte{'h'}, MaxHostNameLen)
	tests := []struct {
		name string
		h    HostInfo
		err  error
	}{
		{"empty name", HostInfo{UniqueID: macB}, nil},
		{"all fields", HostInfo{UniqueID: [6]byte{1, 2, 3, 4, 5, 6}, Level: 255, MapVersion: 0xdeadbeef,
			MapperID: [6]byte{7, 8, 9, 10, 11, 12}, NodeID: 0x01020304, Name: []byte("host.example")}, nil},
		{"max name", HostInfo{Name: long}, nil},
		{"name too long", HostInfo{Name: append(long, 'x')}, ErrName},
		{"NUL in name", HostInfo{Name: []byte("a\x00b")}, ErrName},
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
			if len(body) != HostInfoLen+len(tt.h.Name) {
				t.Fatalf("len %d", len(body))
			}
			got, err := ParseHostInfo(body)
			if err != nil {
				t.Fatal(err)
			}
			if !equalHostInfo(got, tt.h) {
				t.Fatalf("round trip %+v, want %+v", got, tt.h)
			}
		})
	}
	// Field offsets.
	b, _ := AppendHostInfo(nil, &tests[1].h)
	want := "010203040506" + "ff" + "0c" + "deadbeef" + "0708090a0b0c" + "01020304" + hex.EncodeToString([]byte("host.example"))
	if hex.EncodeToString(b) != want {
		t.Fatalf("HostInfo bytes %x, want %s", b, want)
	}
}

func TestParseHostInfoErrors(t *testing.T) {
	good, _ := AppendHostInfo(nil, &scoutInfo)
	mod := func(fn func([]byte) []byte) []byte { return fn(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"short fixed", good[:HostInfoLen-1]},
		{"name cut", good[:len(good)-1]},
		{"trailing byte", append(append([]byte(nil), good...), 'x')},
		{"name length too big", mod(func(b []byte) []byte { b[7] = 200; return append(b, make([]byte, 195)...) })},
		{"NUL in name", mod(func(b []byte) []byte { b[HostInfoLen] = 0; return b })},
	}
	for _, tt := range tests {
		if _, err := ParseHostInfo(tt.b); !errors.Is(err, ErrBody) {
			t.Errorf("%s: error %v, want ErrBody", tt.name, err)
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
	}
	return es
}

func equalEntry(a, b ConfigEntry) bool {
	return a.NodeID == b.NodeID && a.UniqueID == b.UniqueID && bytes.Equal(a.Name, b.Name)
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
		{"empty name entry", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{NodeID: 5}}, nil},
		{"range beyond total", ConfigHeader{TotalHosts: 5, First: 1}, testEntries(5), ErrBody},
		{"bad name", ConfigHeader{TotalHosts: 2}, []ConfigEntry{{NodeID: 1}, {NodeID: 2, Name: []byte{0}}}, ErrName},
		{"long name", ConfigHeader{TotalHosts: 1}, []ConfigEntry{{Name: make([]byte, 129)}}, ErrName},
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
	b, _ := AppendConfig(nil, &ConfigHeader{MapVersion: 0x01020304, MapperID: macA, TotalHosts: 2, First: 1},
		[]ConfigEntry{{NodeID: 2, UniqueID: macB, Name: []byte("node1")}})
	want := "01020304" + "020000000001" + "0002" + "0001" + "0001" +
		"00000002" + "020000000002" + "05" + "00" + "6e6f646531"
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
	}{
		{"nil", nil},
		{"short fixed", good[:ConfigLen-1]},
		{"entry cut", good[:len(good)-1]},
		{"entry fixed part cut", good[:ConfigLen+5]},
		{"trailing byte", append(append([]byte(nil), good...), 'x')},
		{"count too big", mod(func(b []byte) []byte { b[15] = 4; b[11] = 9; return b })},
		{"count too small", mod(func(b []byte) []byte { b[15] = 2; return b })},
		{"first+count > total", mod(func(b []byte) []byte { b[13] = 1; return b })},
		{"name length too big", mod(func(b []byte) []byte { b[ConfigLen+10] = 0xff; return b })},
		{"NUL in name", mod(func(b []byte) []byte { b[ConfigLen+ConfigEntryLen] = 0; return b })},
	}
	for _, tt := range tests {
		if _, err := ParseConfig(tt.b); !errors.Is(err, ErrBody) {
			t.Errorf("%s: error %v, want ErrBody", tt.name, err)
		}
	}
	// The reserved byte of an entry is ignored.
	r := mod(func(b []byte) []byte { b[ConfigLen+11] = 0x5a; return b })
	if _, err := ParseConfig(r); err != nil {
		t.Errorf("reserved byte: %v", err)
	}
}

func TestConfigAck(t *testing.T) {
	a := ConfigAck{MapVersion: 0x0a0b0c0d, UniqueID: macB, NodeID: 0x11223344}
	b := AppendConfigAck([]byte{1}, &a)
	if hex.EncodeToString(b[1:]) != "0a0b0c0d"+"020000000002"+"11223344" {
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
}

// TestGoldenDocVectors pins the GET, CONFIG and CONFIG_ACK example frames
// quoted in docs/PROTOCOL.md.
func TestGoldenDocVectors(t *testing.T) {
	body, err := AppendConfig(nil, &ConfigHeader{MapVersion: 3, MapperID: macA, TotalHosts: 2},
		[]ConfigEntry{{NodeID: 1, UniqueID: macA, Name: []byte("node0")}, {NodeID: 2, UniqueID: macB, Name: []byte("node1")}})
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
			SourceNode: 1, Seq: 6, MsgLen: uint32(len(body))}, body), 0x23e335bc,
			"02000000000202000000000188b50122010100000000000000000000000100000000000000060000000000000032000000000032" +
				"000023e335bc000000030200000000010002000000020000000102000000000105006e6f6465300000000202000000000205006e6f646531"},
		{"CONFIG_ACK", AppendFrame(nil, macA, macB, EtherType, &HeaderFields{Type: TypeConfigAck, TargetPort: 1, SourcePort: 1,
			TargetNode: 1, SourceNode: 2, Seq: 6, MsgLen: uint32(len(ack))}, ack), 0xe90fb833,
			"02000000000102000000000288b5012301010000000000000001000000020000000000000006000000000000000e00000000000e" +
				"0000e90fb8330000000302000000000200000002"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(tt.frame); got != tt.hex {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.hex)
		}
		h, err := ParseFrameCRC(tt.frame, EtherType)
		if err != nil || h.CRC() != tt.crc {
			t.Errorf("%s: %v crc %08x", tt.name, err, h.CRC())
		}
	}
}
