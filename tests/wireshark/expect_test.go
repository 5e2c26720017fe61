package wireshark

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/cmd/gm_frames/frameset"
	"github.com/ethergm/ethergm/wire"
)

// kind says how a field's expected value is compared with tshark's.
type kind int

const (
	kindNum   kind = iota // an integer: the parsed show attribute
	kindBytes             // raw bytes: the value attribute, in hex
	kindNone              // a subtree label: present, no value
)

// want is the expected value of one ethergm.* field.
type want struct {
	name string
	kind kind
	num  uint64
	hex  string
}

func num(name string, v uint64) want { return want{name: name, kind: kindNum, num: v} }
func raw(name string, b []byte) want {
	return want{name: name, kind: kindBytes, hex: hex.EncodeToString(b)}
}
func none(name string) want { return want{name: name, kind: kindNone} }

// flag8 is the expected value of a boolean field of an 8-bit flags byte.
func flag8(name string, v, mask uint8) want {
	if v&mask != 0 {
		return num(name, 1)
	}
	return num(name, 0)
}
func bit(name string, f, mask wire.Flags) want {
	if f&mask != 0 {
		return num(name, 1)
	}
	return num(name, 0)
}

// expecter computes, from package wire's decoding, the fields, expert infos
// and Info column the dissector must show for each frame of a capture, in
// capture order (segment numbering depends on earlier frames).
type expecter struct {
	seg  frameset.Summarizer // for segment numbers
	info frameset.Summarizer // for the Info column
}

// expect returns the expected ethergm.* fields in tree order, the expected
// expert infos (sorted) and the Info column of frame, which must be a valid
// EtherGM frame.
func (x *expecter) expect(tb testing.TB, frame []byte) (fields []want, experts []string, info string) {
	tb.Helper()
	h, err := wire.ParseFrameCRC(frame, wire.EtherType)
	if err != nil {
		tb.Fatalf("wire rejects a frame of the sample: %v", err)
	}
	t, fl := h.Type(), h.Flags()
	fields = []want{
		num("ethergm.version", uint64(h.Version())),
		num("ethergm.type", uint64(t)),
		num("ethergm.tport", uint64(h.TargetPort())),
		num("ethergm.sport", uint64(h.SourcePort())),
		num("ethergm.flags", uint64(fl)),
		bit("ethergm.flags.high", fl, wire.FlagHigh),
		bit("ethergm.flags.ackreq", fl, wire.FlagAckRequest),
		bit("ethergm.flags.ackvalid", fl, wire.FlagAckValid),
		bit("ethergm.flags.retransmit", fl, wire.FlagRetransmit),
		bit("ethergm.flags.reply", fl, wire.FlagReply),
	}
	if t == wire.TypeGet || fl.Has(wire.FlagSepReply) {
		fields = append(fields, bit("ethergm.flags.sepreply", fl, wire.FlagSepReply))
	}
	const defined = wire.FlagHigh | wire.FlagAckRequest | wire.FlagAckValid | wire.FlagRetransmit |
		wire.FlagReply | wire.FlagSepReply
	if undef := fl &^ defined; undef != 0 {
		fields = append(fields, num("ethergm.flags.reserved", uint64(undef>>6)))
	}
	fields = append(fields, num("ethergm.size", uint64(h.Size())), num("ethergm.status", uint64(h.Status())))
	if t == wire.TypeNack {
		experts = append(experts, "ethergm.nack")
	}
	if h.TargetPort() == wire.PortNone {
		experts = append(experts, "ethergm.selftest")
	}
	fields = append(fields,
		num("ethergm.tnode", uint64(h.TargetNode())),
		num("ethergm.snode", uint64(h.SourceNode())),
		num("ethergm.session", uint64(h.Session())),
		num("ethergm.seq", uint64(h.Seq())),
		num("ethergm.ack", uint64(h.Ack())),
	)
	if t == wire.TypeDatagram && h.TargetPort() < wire.NumPorts {
		// The sender's datagram counter (docs/PROTOCOL.md, section 7.7).
		fields = append(fields, num("ethergm.dgcounter", uint64(h.Session())<<32|uint64(h.Seq())))
	}
	fields = append(fields,
		num(msglenField(t), uint64(h.MsgLen())),
		num("ethergm.offset", uint64(h.Offset())),
		num("ethergm.paylen", uint64(h.PayloadLen())),
		num("ethergm.reserved", uint64(h.Reserved())),
	)
	if t.IsData() {
		k, n, ok := x.seg.Segment(h)
		if t == wire.TypeData {
			k, n, ok = 1, 1, int(h.Offset())+h.PayloadLen() <= int(h.MsgLen())
		}
		if ok {
			fields = append(fields, num("ethergm.seg.index", uint64(k)), num("ethergm.seg.count", uint64(n)))
		}
	}
	if t.HasRemoteAddr() {
		fields = append(fields, num("ethergm.raddr", h.RemoteAddr()))
	}
	fields = append(fields, num("ethergm.crc", uint64(h.CRC())), num("ethergm.crc.status", 1))
	switch {
	case fl.Has(wire.FlagRetransmit) && t == wire.TypeAck:
		experts = append(experts, "ethergm.ack.goback")
	case fl.Has(wire.FlagRetransmit) && t.IsReliable():
		experts = append(experts, "ethergm.retransmission")
	}
	payload := h.Payload()
	switch {
	case t.IsMapper():
		fields = append(fields, bodyFields(tb, t, payload)...)
	case t == wire.TypeAck && len(payload) > 0:
		fields = append(fields, raw("ethergm.ack.sack", payload))
	case t == wire.TypeGet && len(payload) == 8:
		fields = append(fields, num("ethergm.get.laddr", binary.BigEndian.Uint64(payload)))
	case len(payload) > 0:
		fields = append(fields, raw("ethergm.payload", payload))
	}
	end := wire.EthHeaderLen + h.Len() + h.PayloadLen()
	if end < len(frame) {
		if len(frame) > 60 {
			experts = append(experts, "ethergm.trailing")
		} else {
			fields = append(fields, raw("ethergm.padding", frame[end:]))
		}
	}
	slices.Sort(experts)
	return fields, experts, x.info.Summary(frame, wire.EtherType)
}

// msglenField is the field the dissector shows the msglen bytes as: the
// receive window in OPEN_ACK frames (docs/PROTOCOL.md, section 7.9).
func msglenField(t wire.Type) string {
	if t == wire.TypeOpenAck {
		return "ethergm.window"
	}
	return "ethergm.msglen"
}

// bodyFields returns the expected fields of a mapper body, decoded with
// wire's parsers.
func bodyFields(tb testing.TB, t wire.Type, body []byte) []want {
	tb.Helper()
	switch t {
	case wire.TypeScout, wire.TypeScoutReply:
		hi, err := wire.ParseHostInfo(body)
		if err != nil {
			tb.Fatalf("%v body: %v", t, err)
		}
		ws := []want{
			none("ethergm.scout"),
			num("ethergm.scout.rev", wire.MapperRev),
			num("ethergm.scout.flags", uint64(hi.Flags)),
			flag8("ethergm.scout.flags.hello", uint8(hi.Flags), uint8(wire.HostHello)),
			flag8("ethergm.scout.flags.leader", uint8(hi.Flags), uint8(wire.HostLeader)),
			flag8("ethergm.scout.flags.configured", uint8(hi.Flags), uint8(wire.HostConfigured)),
			num("ethergm.scout.level", uint64(hi.Level)),
			num("ethergm.scout.namelen", uint64(len(hi.Name))),
			num("ethergm.scout.mapversion", uint64(hi.MapVersion)),
			num("ethergm.scout.node", uint64(hi.NodeID)),
			raw("ethergm.scout.mapper", hi.MapperID[:]),
			num("ethergm.scout.rails", uint64(hi.NumRails)),
			raw("ethergm.scout.uid", hi.UniqueID[:]),
		}
		for _, r := range hi.Rails[:hi.NumRails] {
			ws = append(ws,
				none("ethergm.scout.rail"),
				raw("ethergm.scout.rail.mac", r.MAC[:]),
				num("ethergm.scout.rail.state", uint64(r.State)),
				flag8("ethergm.scout.rail.up", uint8(r.State), uint8(wire.RailUp)),
				flag8("ethergm.scout.rail.hearing", uint8(r.State), uint8(wire.RailHearing)),
			)
		}
		if len(hi.Name) > 0 {
			ws = append(ws, raw("ethergm.scout.name", hi.Name))
		}
		return ws
	case wire.TypeConfig:
		c, err := wire.ParseConfig(body)
		if err != nil {
			tb.Fatalf("CONFIG body: %v", err)
		}
		ws := []want{
			none("ethergm.config"),
			num("ethergm.config.rev", wire.MapperRev),
			num("ethergm.config.flags", uint64(c.Flags)),
			flag8("ethergm.config.flags.table", uint8(c.Flags), uint8(wire.ConfigTable)),
			num("ethergm.config.total", uint64(c.TotalHosts)),
			num("ethergm.config.mapversion", uint64(c.MapVersion)),
			raw("ethergm.config.mapper", c.MapperID[:]),
			num("ethergm.config.first", uint64(c.First)),
			num("ethergm.config.count", uint64(c.Count)),
		}
		for i, e := range c.All() {
			ws = append(ws,
				none("ethergm.config.entry"),
				num("ethergm.config.entry.index", uint64(i)),
				num("ethergm.config.entry.node", uint64(e.NodeID)),
				num("ethergm.config.entry.flags", uint64(e.Flags)),
				flag8("ethergm.config.entry.absent", uint8(e.Flags), uint8(wire.EntryAbsent)),
				num("ethergm.config.entry.rails", uint64(e.NumRails)),
				num("ethergm.config.entry.upmask", uint64(e.UpMask)),
				num("ethergm.config.entry.namelen", uint64(len(e.Name))),
				raw("ethergm.config.entry.uid", e.UniqueID[:]),
			)
			for r, mac := range e.MACs[:e.NumRails] {
				ws = append(ws, raw("ethergm.config.entry.mac", mac[:]), num("ethergm.config.entry.seen", uint64(e.Seen[r])))
			}
			if len(e.Name) > 0 {
				ws = append(ws, raw("ethergm.config.entry.name", e.Name))
			}
		}
		return ws
	case wire.TypeConfigAck:
		a, err := wire.ParseConfigAck(body)
		if err != nil {
			tb.Fatalf("CONFIG_ACK body: %v", err)
		}
		return []want{
			none("ethergm.configack"),
			num("ethergm.configack.rev", wire.MapperRev),
			num("ethergm.configack.flags", uint64(a.Flags)),
			flag8("ethergm.configack.flags.table", uint8(a.Flags), uint8(wire.ConfigTable)),
			raw("ethergm.configack.uid", a.UniqueID[:]),
			num("ethergm.configack.mapversion", uint64(a.MapVersion)),
			num("ethergm.configack.node", uint64(a.NodeID)),
		}
	}
	tb.Fatalf("no body decoding for mapper type %v", t)
	return nil
}

// match reports a difference between the wanted fields and the dissected
// ones, or "" if they agree: same names in the same order, same values.
func match(ws []want, got []field) string {
	var diffs []string
	for i := 0; i < max(len(ws), len(got)); i++ {
		switch {
		case i >= len(got):
			diffs = append(diffs, fmt.Sprintf("missing %s", ws[i].name))
			continue
		case i >= len(ws):
			diffs = append(diffs, fmt.Sprintf("unexpected %s = %q", got[i].name, got[i].show))
			continue
		}
		w, g := ws[i], got[i]
		if w.name != g.name {
			diffs = append(diffs, fmt.Sprintf("field %d is %s, want %s", i, g.name, w.name))
			break
		}
		switch w.kind {
		case kindNum:
			v, err := strconv.ParseUint(g.show, 0, 64)
			if err != nil || v != w.num {
				diffs = append(diffs, fmt.Sprintf("%s = %q, want %d (%#x)", w.name, g.show, w.num, w.num))
			}
		case kindBytes:
			if !strings.EqualFold(g.value, w.hex) {
				diffs = append(diffs, fmt.Sprintf("%s = %s, want %s", w.name, abbrev(g.value), abbrev(w.hex)))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

func abbrev(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// expertAbbrs returns the sorted abbreviations of p's expert infos.
func expertAbbrs(p *packet) []string {
	var a []string
	for _, e := range p.experts {
		a = append(a, e.abbr)
	}
	slices.Sort(a)
	return a
}

// checkValidCapture dissects the capture at path and compares every
// EtherGM frame in it with package wire's decoding: every ethergm.* field,
// the expert infos and the Info column. Frames of other EtherTypes are
// skipped. It returns how many frames of each type it checked.
func checkValidCapture(t *testing.T, path string) map[wire.Type]int {
	t.Helper()
	frames := readCapture(t, path)
	pkts := dissect(t, path)
	if len(pkts) != len(frames) {
		t.Fatalf("%s: tshark shows %d packets, the file holds %d frames", path, len(pkts), len(frames))
	}
	seen := make(map[wire.Type]int)
	var x expecter
	for i, f := range frames {
		p := &pkts[i]
		if len(f.data) < wire.EthHeaderLen || binary.BigEndian.Uint16(f.data[12:]) != wire.EtherType {
			continue
		}
		if len(p.luaErrors) > 0 {
			t.Errorf("%s: Lua errors: %v", describe(p), p.luaErrors)
		}
		if p.malformed {
			t.Errorf("%s: shown as malformed", describe(p))
		}
		if !p.hasProto {
			t.Errorf("frame %d: not dissected as EtherGM", p.number)
			continue
		}
		ws, experts, info := x.expect(t, f.data)
		if d := match(ws, p.fields); d != "" {
			t.Errorf("%s: %s", describe(p), d)
		}
		if got := expertAbbrs(p); !slices.Equal(got, experts) {
			t.Errorf("%s: expert infos %v, want %v", describe(p), got, experts)
		}
		if p.info != info {
			t.Errorf("frame %d: Info column\n got: %s\nwant: %s", p.number, p.info, info)
		}
		ty := wire.Header(f.data[wire.EthHeaderLen:]).Type()
		// The type's value string must be wire's name for it.
		if wantName := fmt.Sprintf("Type: %v (0x%02x)", ty, uint8(ty)); len(p.fields) < 2 || p.fields[1].showName != wantName {
			t.Errorf("%s: type not shown as %q", describe(p), wantName)
		}
		seen[ty]++
	}
	return seen
}

// checkAllTypes fails the test if a type of wire.Types() is missing from
// seen, or if the dissector's value string for it is not wire's name.
func checkAllTypes(t *testing.T, what string, seen map[wire.Type]int) {
	t.Helper()
	for _, ty := range wire.Types() {
		if seen[ty] == 0 {
			t.Errorf("%s: no %v frame seen and decoded (every type of wire.Types() must be)", what, ty)
		}
	}
}
