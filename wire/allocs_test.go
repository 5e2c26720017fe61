package wire

import "testing"

func TestZeroAllocs(t *testing.T) {
	payload := make([]byte, 1500)
	buf := make([]byte, 0, 2048)
	f := golden[3].f
	frame := AppendFrame(nil, macB, macA, EtherType, &f, payload)
	h, _ := ParseFrame(frame, EtherType)
	hostInfo, _ := AppendHostInfo(nil, &scoutInfo)
	cfg, _ := AppendConfig(nil, &ConfigHeader{TotalHosts: 20}, testEntries(20))
	ack := AppendConfigAck(nil, &ConfigAck{MapVersion: 1})
	var sink int
	tests := []struct {
		name string
		fn   func()
	}{
		{"AppendFrame", func() { buf = AppendFrame(buf[:0], macB, macA, EtherType, &f, payload) }},
		{"ParseFrame", func() {
			h, err := ParseFrame(frame, EtherType)
			if err != nil {
				panic(err)
			}
			sink += h.PayloadLen()
		}},
		{"ParseFrameCRC", func() {
			if _, err := ParseFrameCRC(frame, EtherType); err != nil {
				panic(err)
			}
		}},
		{"ParseFrame error", func() {
			if _, err := ParseFrame(frame[:20], EtherType); err == nil {
				panic("no error")
			}
		}},
		{"CheckCRC", func() {
			if !h.CheckCRC() {
				panic("crc")
			}
		}},
		{"Fields", func() { sink += int(h.Fields().Seq) }},
		{"FrameLen", func() { sink += FrameLen(frame) }},
		{"AppendHostInfo", func() { buf, _ = AppendHostInfo(buf[:0], &scoutInfo) }},
		{"ParseHostInfo", func() {
			hi, err := ParseHostInfo(hostInfo)
			if err != nil {
				panic(err)
			}
			sink += len(hi.Name)
		}},
		{"AppendConfig", func() { buf, _ = AppendConfig(buf[:0], &ConfigHeader{TotalHosts: 3}, testConfigEntries) }},
		{"ParseConfig+Entries", func() {
			c, err := ParseConfig(cfg)
			if err != nil {
				panic(err)
			}
			it := c.Entries()
			for e, ok := it.Next(); ok; e, ok = it.Next() {
				sink += len(e.Name)
			}
		}},
		{"ParseConfig+All", func() {
			c, err := ParseConfig(cfg)
			if err != nil {
				panic(err)
			}
			for _, e := range c.All() {
				sink += len(e.Name)
			}
		}},
		{"Config.Entry", func() {
			c, _ := ParseConfig(cfg)
			e, _ := c.Entry(7)
			sink += int(e.NodeID)
		}},
		{"AppendConfigAck", func() { buf = AppendConfigAck(buf[:0], &ConfigAck{NodeID: 1}) }},
		{"ParseConfigAck", func() {
			a, _ := ParseConfigAck(ack)
			sink += int(a.NodeID)
		}},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.fn); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tt.name, n)
		}
	}
	_ = sink
}

var testConfigEntries = testEntries(3)
