package wireshark

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/cmd/gm_frames/frameset"
	"github.com/ethergm/ethergm/wire"
)

// updateExampleEnv makes TestDissectorSample rewrite the example capture.
const updateExampleEnv = "ETHERGM_UPDATE_EXAMPLE"

// examplePath is the example capture kept in the repository, relative to
// this package.
var examplePath = filepath.Join("..", "..", "wire", "wireshark", "testdata", "example.pcapng")

var (
	macA = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x00, 0x01}
	macB = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x00, 0x02}
)

// sampleParams are the endpoints of the sample frames of the unit tests.
var sampleParams = frameset.Params{
	Dst: macB, Src: macA,
	SrcNode: 1, DstNode: 2, SrcPort: 2, DstPort: 3,
	Session: 0x5e55,
}

// sampleFrames returns the gm_frames sample, plus a copy of the go-back ACK
// padded to the Ethernet minimum as a NIC would, and a link self-test
// frame.
func sampleFrames(tb testing.TB, p *frameset.Params) []capturedFrame {
	tb.Helper()
	set, err := frameset.Build(p)
	if err != nil {
		tb.Fatal(err)
	}
	var frames []capturedFrame
	for _, f := range set {
		frames = append(frames, capturedFrame{data: f.Bytes, origLen: len(f.Bytes)})
		if f.Name == "ACK go back" {
			padded := append(slices.Clone(f.Bytes), make([]byte, 60-len(f.Bytes))...)
			frames = append(frames, capturedFrame{data: padded, origLen: len(padded)})
		}
	}
	et := p.EtherType
	if et == 0 {
		et = wire.EtherType
	}
	selfTest := wire.AppendFrame(nil, p.Src, p.Src, et, &wire.HeaderFields{Type: wire.TypeDatagram,
		TargetPort: wire.PortNone, SourcePort: wire.PortNone, Session: 0x1f2e3d4c, Seq: 3, MsgLen: 5},
		[]byte("probe"))
	frames = append(frames, capturedFrame{data: selfTest, origLen: len(selfTest)})
	return frames
}

// TestDissectorSample decodes one frame of every type (the gm_frames
// sample) and compares every field with package wire.
func TestDissectorSample(t *testing.T) {
	t.Parallel()
	needTshark(t)
	path := filepath.Join(t.TempDir(), "sample.pcapng")
	writeCapture(t, path, sampleFrames(t, &sampleParams))
	seen := checkValidCapture(t, path)
	checkAllTypes(t, "sample", seen)

	if os.Getenv(updateExampleEnv) == "1" && !t.Failed() {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(examplePath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", examplePath, len(b))
	}
}

// TestDissectorExample checks that the example capture kept in the
// repository (the one docs/img/wireshark.png shows) still decodes cleanly
// and holds every type.
func TestDissectorExample(t *testing.T) {
	t.Parallel()
	needTshark(t)
	if _, err := os.Stat(examplePath); err != nil {
		t.Fatalf("%v (generate it with %s=1 go test -run TestDissectorSample ./tests/wireshark/)", err, updateExampleEnv)
	}
	seen := checkValidCapture(t, examplePath)
	checkAllTypes(t, examplePath+" (regenerate it with "+updateExampleEnv+"=1 go test -run TestDissectorSample)", seen)
}

// TestDissectorEtherTypePref checks the preference that moves the
// dissector to another EtherType.
func TestDissectorEtherTypePref(t *testing.T) {
	t.Parallel()
	needTshark(t)
	p := sampleParams
	p.EtherType = 0x88B6
	path := filepath.Join(t.TempDir(), "other.pcapng")
	writeCapture(t, path, sampleFrames(t, &p))
	for _, tt := range []struct {
		name string
		args []string
		want bool
	}{
		{name: "default", args: nil, want: false},
		{name: "set", args: []string{"-o", "ethergm.ethertype:" + strconv.Itoa(0x88B6)}, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, pk := range dissect(t, path, tt.args...) {
				if pk.hasProto != tt.want {
					t.Errorf("%s: dissected as EtherGM = %v, want %v", describe(&pk), pk.hasProto, tt.want)
				}
			}
		})
	}
}

// brokenCase is a frame the dissector must flag.
type brokenCase struct {
	name      string
	frame     []byte
	origLen   int      // original length; > len(frame) for a truncated capture
	wireErr   error    // what package wire says about the captured bytes
	experts   []string // the expert infos the dissector must raise (exactly)
	crcStatus string   // ethergm.crc.status: 0 Bad, 1 Good, 2 Unverified, "" absent
	info      string   // a marker the Info column must contain
	malformed bool     // whether Wireshark marks the frame malformed
}

// build returns a valid frame of the given type from the sample.
func sampleFrame(tb testing.TB, t wire.Type) []byte {
	tb.Helper()
	set, err := frameset.Build(&sampleParams)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range set {
		if f.Type == t {
			return slices.Clone(f.Bytes)
		}
	}
	tb.Fatalf("no %v frame in the sample", t)
	return nil
}

// header returns the EtherGM header view of frame.
func header(frame []byte) wire.Header { return wire.Header(frame[wire.EthHeaderLen:]) }

func brokenCases(tb testing.TB) []brokenCase {
	badPayload := sampleFrame(tb, wire.TypeData)
	badPayload[len(badPayload)-5] ^= 0x20 // flip a payload bit, fix nothing

	badHeader := sampleFrame(tb, wire.TypeDataMiddle)
	header(badHeader)[wire.OffSeq+3] ^= 1

	badVersion := sampleFrame(tb, wire.TypeAck)
	header(badVersion)[wire.OffVersion] = 2
	header(badVersion).UpdateCRC()

	badType := sampleFrame(tb, wire.TypeAck)
	header(badType)[wire.OffType] = 0x7f
	header(badType).UpdateCRC()

	long := sampleFrame(tb, wire.TypeDataFirst) // 1000-byte payload

	trailing := append(sampleFrame(tb, wire.TypeDatagram), make([]byte, 20)...)

	badConfig := sampleFrame(tb, wire.TypeConfig)
	cfg := header(badConfig).Payload()
	binary.BigEndian.PutUint16(cfg[16:], binary.BigEndian.Uint16(cfg[16:])+1) // one entry more than present
	header(badConfig).UpdateCRC()

	badConfigAck := sampleFrame(tb, wire.TypeConfigAck)
	badConfigAck = badConfigAck[:len(badConfigAck)-1]
	binary.BigEndian.PutUint16(header(badConfigAck)[wire.OffPayloadLen:], wire.ConfigAckLen-1)
	header(badConfigAck).UpdateCRC()

	badSegment := sampleFrame(tb, wire.TypeDataMiddle)
	header(badSegment).SetMsgLen(1500) // offset 1000 + 1000 bytes > 1500
	header(badSegment).UpdateCRC()

	getNoAddr := sampleFrame(tb, wire.TypeGet)
	getNoAddr = getNoAddr[:len(getNoAddr)-8]
	binary.BigEndian.PutUint16(header(getNoAddr)[wire.OffPayloadLen:], 0)
	header(getNoAddr).UpdateCRC()

	badPort := sampleFrame(tb, wire.TypeDatagram)
	header(badPort).SetTargetPort(20)
	header(badPort).UpdateCRC()

	nulName := sampleFrame(tb, wire.TypeScoutReply)
	nulName[len(nulName)-2] = 0
	header(nulName).UpdateCRC()

	scoutLen := sampleFrame(tb, wire.TypeScout)
	header(scoutLen).Payload()[3]-- // name length one short of the body
	header(scoutLen).UpdateCRC()

	badRev := sampleFrame(tb, wire.TypeScout)
	header(badRev).Payload()[0] = wire.MapperRev + 1 // a mapper body revision from the future
	header(badRev).UpdateCRC()

	emptyScout := wire.AppendFrame(nil, wire.Broadcast, macA, wire.EtherType,
		&wire.HeaderFields{Type: wire.TypeScout, TargetPort: 1, SourcePort: 1}, nil)

	statusSet := sampleFrame(tb, wire.TypeData)
	header(statusSet).SetStatus(3)
	header(statusSet).UpdateCRC()

	return []brokenCase{
		{name: "bad CRC (payload bit flipped)", frame: badPayload, wireErr: wire.ErrCRC,
			experts: []string{"ethergm.crc.bad"}, crcStatus: "0", info: "[BAD CRC]"},
		{name: "bad CRC (header bit flipped)", frame: badHeader, wireErr: wire.ErrCRC,
			experts: []string{"ethergm.crc.bad"}, crcStatus: "0", info: "[BAD CRC]"},
		{name: "unknown version", frame: badVersion, wireErr: wire.ErrVersion,
			experts: []string{"ethergm.version.unknown"}, crcStatus: "1", info: "[version 2]"},
		{name: "unknown type", frame: badType, wireErr: wire.ErrUnknownType,
			experts: []string{"ethergm.type.unknown"}, crcStatus: "1", info: "Type(0x7f)"},
		{name: "truncated capture", frame: long[:100], origLen: len(long), wireErr: wire.ErrLength,
			experts: []string{"ethergm.truncated"}, crcStatus: "2", info: "[TRUNCATED]"},
		{name: "payload length exceeds frame", frame: long[:100], wireErr: wire.ErrLength,
			experts: []string{"ethergm.paylen.bad"}, crcStatus: "2", info: "[BAD LENGTH]", malformed: true},
		{name: "short frame", frame: long[:30], wireErr: wire.ErrShort,
			experts: []string{"ethergm.short"}, info: "short frame", malformed: true},
		{name: "trailing bytes", frame: trailing, wireErr: nil,
			experts: []string{"ethergm.trailing"}, crcStatus: "1", info: "DATAGRAM"},
		{name: "CONFIG entry count too high", frame: badConfig, wireErr: wire.ErrBody,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "CONFIG", malformed: true},
		{name: "CONFIG_ACK body too short", frame: badConfigAck, wireErr: wire.ErrBody,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "CONFIG_ACK", malformed: true},
		{name: "segment outside message", frame: badSegment, wireErr: nil,
			experts: []string{"ethergm.seg.bad"}, crcStatus: "1", info: "DATA_MIDDLE"},
		{name: "truncated inside the header", frame: long[:40], origLen: len(long), wireErr: wire.ErrShort,
			experts: []string{"ethergm.truncated"}, info: "[TRUNCATED: 26 of 1044 bytes captured]"},
		{name: "GET without local address", frame: getNoAddr, wireErr: nil,
			experts: []string{"ethergm.get.bad"}, crcStatus: "1", info: "GET"},
		{name: "target port 20", frame: badPort, wireErr: nil,
			experts: []string{"ethergm.port.invalid"}, crcStatus: "1", info: "1:2 -> 2:20"},
		{name: "SCOUT_REPLY name with a NUL byte", frame: nulName, wireErr: wire.ErrBody,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "SCOUT_REPLY", malformed: true},
		{name: "SCOUT body of revision 3", frame: badRev, wireErr: wire.ErrMapperRev,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "[revision 3]", malformed: true},
		{name: "SCOUT without a body", frame: emptyScout, wireErr: wire.ErrBody,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "[bad body]", malformed: true},
		{name: "status in a DATA frame", frame: statusSet, wireErr: nil,
			experts: []string{"ethergm.status.nonzero"}, crcStatus: "1", info: "DATA"},
		{name: "SCOUT name length disagrees with body", frame: scoutLen, wireErr: wire.ErrBody,
			experts: []string{"ethergm.body.bad"}, crcStatus: "1", info: "SCOUT", malformed: true},
	}
}

// wireVerdict returns package wire's error for a captured frame: the
// header parse with CRC check, then the mapper body parse.
func wireVerdict(frame []byte) error {
	h, err := wire.ParseFrameCRC(frame, wire.EtherType)
	if err != nil {
		return err
	}
	switch h.Type() {
	case wire.TypeScout, wire.TypeScoutReply:
		_, err = wire.ParseHostInfo(h.Payload())
	case wire.TypeConfig:
		_, err = wire.ParseConfig(h.Payload())
	case wire.TypeConfigAck:
		_, err = wire.ParseConfigAck(h.Payload())
	}
	return err
}

// TestDissectorExperts feeds deliberately broken frames to the dissector:
// each must raise exactly its expert info, set the CRC status and mark the
// Info column, without Lua errors, and package wire must reject the same
// frames.
func TestDissectorExperts(t *testing.T) {
	t.Parallel()
	needTshark(t)
	checkBroken(t, brokenCases(t))
}

// checkBroken writes the frames of cases to a capture, dissects it and
// checks each frame's expert infos, CRC status, Info column and
// malformation mark, and package wire's verdict.
func checkBroken(t *testing.T, cases []brokenCase) {
	t.Helper()
	var frames []capturedFrame
	for _, c := range cases {
		frames = append(frames, capturedFrame{data: c.frame, origLen: max(c.origLen, len(c.frame))})
	}
	path := filepath.Join(t.TempDir(), "broken.pcapng")
	writeCapture(t, path, frames)
	pkts := dissect(t, path)
	if len(pkts) != len(cases) {
		t.Fatalf("tshark shows %d packets, want %d", len(pkts), len(cases))
	}
	for i, c := range cases {
		p := &pkts[i]
		t.Run(c.name, func(t *testing.T) {
			if err := wireVerdict(c.frame); !errors.Is(err, c.wireErr) {
				t.Errorf("package wire: %v, want %v", err, c.wireErr)
			}
			if !p.hasProto {
				t.Fatalf("%s: not dissected as EtherGM", describe(p))
			}
			if len(p.luaErrors) > 0 {
				t.Errorf("%s: Lua errors %v", describe(p), p.luaErrors)
			}
			if got := expertAbbrs(p); !slices.Equal(got, c.experts) {
				t.Errorf("%s: expert infos %v, want %v", describe(p), got, c.experts)
			}
			for _, e := range p.experts {
				if e.message == "" {
					t.Errorf("%s: expert info %s has no message", describe(p), e.abbr)
				}
			}
			st := p.fieldValues("ethergm.crc.status")
			switch {
			case c.crcStatus == "" && len(st) != 0:
				t.Errorf("%s: ethergm.crc.status = %v, want none", describe(p), st)
			case c.crcStatus != "" && !slices.Equal(st, []string{c.crcStatus}):
				t.Errorf("%s: ethergm.crc.status = %v, want %s", describe(p), st, c.crcStatus)
			}
			if c.crcStatus == "0" {
				want := fmt.Sprintf("0x%08x", header(c.frame).ComputeCRC())
				if got := p.fieldValues("ethergm.crc.calculated"); !slices.Equal(got, []string{want}) {
					t.Errorf("%s: ethergm.crc.calculated = %v, want %s", describe(p), got, want)
				}
			}
			if !strings.Contains(p.info, c.info) {
				t.Errorf("%s: Info column lacks %q", describe(p), c.info)
			}
			if p.malformed != c.malformed {
				t.Errorf("%s: malformed = %v, want %v", describe(p), p.malformed, c.malformed)
			}
		})
	}
}

// TestDisplayFilters checks the display filters the README recommends.
func TestDisplayFilters(t *testing.T) {
	t.Parallel()
	needTshark(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mixed.pcapng")
	frames := sampleFrames(t, &sampleParams)
	for _, c := range brokenCases(t) {
		frames = append(frames, capturedFrame{data: c.frame, origLen: max(c.origLen, len(c.frame))})
	}
	writeCapture(t, path, frames)
	count := func(filter string) int {
		out := runTshark(t, "-r", path, "-Y", filter, "-T", "fields", "-e", "frame.number")
		return bytes.Count(out, []byte("\n"))
	}
	nReasons := 0
	for r := wire.NackReason(1); r.Valid(); r++ {
		nReasons++
	}
	for _, tt := range []struct {
		filter string
		want   int
	}{
		{`ethergm`, len(frames)},
		{`ethergm.type == 6 && ethergm.status == 1`, 1},
		{`ethergm.type == 6`, nReasons},
		{`ethergm.type == "NACK" && ethergm.status == "STALE_SESSION"`, 1},
		{`ethergm.crc.status == "Bad"`, 2},
		{`ethergm.crc.status == "Good"`, len(frames) - 6},
		{`ethergm.crc.status == "Unverified"`, 2},
		{`ethergm.flags.retransmit == 1`, 3},
		{`ethergm.flags.retransmit == 1 && ethergm.type != 5`, 1},
		{`ethergm.tport == 0xff`, 1},
		{`ethergm.type == 0x22 && ethergm.config.entry.name contains "node-two"`, 2},
		{`_ws.expert.severity >= "Error" && ethergm`, 12},
		{`ethergm.raddr`, 4},
		{`ethergm.flags.reply == 1 && ethergm.type == "GOT"`, 1},
		{`ethergm.flags.sepreply == 1`, count(`ethergm.type == "GET"`)},
		{`ethergm.flags.reply == 1`, 1},
		{`ethergm.window == 448`, 1},
		{`ethergm.type == "OPEN" && ethergm.session == 0x5e55 && ethergm.ack == 0x5e54`, 1},
	} {
		if got := count(tt.filter); got != tt.want {
			t.Errorf("-Y '%s' matches %d frames, want %d", tt.filter, got, tt.want)
		}
	}

	// The Info column of the session handshake names the session, the one
	// an OPEN replaces and the window an OPEN_ACK advertises.
	out := runTshark(t, "-r", path, "-Y", `ethergm.type == "OPEN" || ethergm.type == "OPEN_ACK"`,
		"-T", "fields", "-e", "_ws.col.Info")
	want := "OPEN 1:2 -> 2:3 session=0x5e55 replaces=0x5e54 [HIGH]\n" +
		"OPEN_ACK seq=200 ack=41 1:2 -> 2:3 session=0x5e55 window=448 [ACKVALID]\n"
	if string(out) != want {
		t.Errorf("Info column of OPEN and OPEN_ACK:\n%s\nwant\n%s", out, want)
	}

	// Every filter the README recommends is valid and matches something.
	for _, f := range readmeFilters(t) {
		if count(f) == 0 {
			t.Errorf("README filter %q matches no frame", f)
		}
	}
}

// readmeFilters returns the display filters listed in the "Useful display
// filters" block of wire/wireshark/README.md: each line of the block up to
// a run of two spaces.
func readmeFilters(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "wire", "wireshark", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sect, ok := strings.Cut(string(b), "## Useful display filters")
	if !ok {
		t.Fatal("README.md has no \"Useful display filters\" section")
	}
	_, block, _ := strings.Cut(sect, "```\n")
	block, _, _ = strings.Cut(block, "```")
	var filters []string
	for line := range strings.SplitSeq(block, "\n") {
		f, _, _ := strings.Cut(line, "  ")
		if f = strings.TrimSpace(f); f != "" {
			filters = append(filters, f)
		}
	}
	if len(filters) < 5 {
		t.Fatalf("found only %d filters in README.md", len(filters))
	}
	return filters
}
