package wireshark

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/capture"
	"github.com/google/gopacket/pcapgo"
)

// requireTsharkEnv makes a missing tshark a failure instead of a skip; so
// does the netns harness's ETHERGM_REQUIRE_NETNS=1, which make test sets.
const requireTsharkEnv = "ETHERGM_REQUIRE_TSHARK"

// tsharkTimeout bounds one tshark run.
const tsharkTimeout = 30 * time.Second

// needTshark returns the path of tshark, or skips the test (fails it when
// tshark is required) if it is not installed.
func needTshark(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv(requireTsharkEnv) == "1" || os.Getenv("ETHERGM_REQUIRE_NETNS") == "1" {
			tb.Fatalf("tshark is required but not installed (apt-get install tshark): %v", err)
		}
		tb.Skipf("tshark not installed: %v", err)
	}
	return p
}

// dissectorPath returns the absolute path of the Lua dissector.
func dissectorPath(tb testing.TB) string {
	tb.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "wire", "wireshark", "ethergm.lua"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// tsharkEnv is the environment tshark runs in: a fresh HOME, so that a
// dissector installed with make wireshark-install or personal preferences
// do not interfere with the one under test.
func tsharkEnv(tb testing.TB) []string {
	home := tb.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "LC_ALL=C.UTF-8"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// runTshark runs tshark with the dissector loaded and returns its standard
// output. It fails the test if tshark fails or reports a Lua error.
func runTshark(tb testing.TB, args ...string) []byte {
	tb.Helper()
	bin := needTshark(tb)
	all := append([]string{"-X", "lua_script:" + dissectorPath(tb)}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Env = tsharkEnv(tb)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
	case <-time.After(tsharkTimeout):
		_ = cmd.Process.Kill()
		<-done
		tb.Fatalf("tshark %s: no result after %v", strings.Join(args, " "), tsharkTimeout)
	}
	checkStderr(tb, stderr.String())
	return stdout.Bytes()
}

// checkStderr fails the test on any tshark diagnostic other than the
// warning about running as root: tshark reports Lua load and run-time
// errors there but still exits 0.
func checkStderr(tb testing.TB, stderr string) {
	tb.Helper()
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "Running as user") {
			continue
		}
		tb.Errorf("tshark stderr: %s", line)
	}
}

// field is one ethergm.* tree item of a dissected packet.
type field struct {
	name     string
	showName string // the whole displayed line
	show     string // the displayed value
	value    string // the raw bytes in hex, empty for generated items
}

// expertInfo is one expert info item of a dissected packet.
type expertInfo struct {
	abbr    string // the ProtoExpert's abbreviation, e.g. ethergm.crc.bad
	message string
}

// packet is the dissection of one frame.
type packet struct {
	number    int
	info      string       // the Info column
	hasProto  bool         // an "ethergm" protocol item is present
	fields    []field      // the ethergm.* items in tree order, experts excluded
	experts   []expertInfo // expert infos added by the dissector
	malformed bool         // _ws.malformed appears
	luaErrors []string     // Lua run-time errors shown in the tree
}

// fieldValues returns the shows of every field called name.
func (p *packet) fieldValues(name string) []string {
	var v []string
	for _, f := range p.fields {
		if f.name == name {
			v = append(v, f.show)
		}
	}
	return v
}

// pdmlNode is a <proto> or <field> element of tshark's PDML output.
type pdmlNode struct {
	XMLName  xml.Name
	Name     string     `xml:"name,attr"`
	ShowName string     `xml:"showname,attr"`
	Show     string     `xml:"show,attr"`
	Value    string     `xml:"value,attr"`
	Children []pdmlNode `xml:",any"`
}

type pdmlPacket struct {
	Protos []pdmlNode `xml:"proto"`
}

// dissect runs tshark on the capture at path and returns one packet per
// frame, with the ethergm tree from PDML and the Info column.
func dissect(tb testing.TB, path string, extra ...string) []packet {
	tb.Helper()
	out := runTshark(tb, append([]string{"-r", path, "-T", "pdml"}, extra...)...)
	var pkts []packet
	dec := xml.NewDecoder(bytes.NewReader(out))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatalf("PDML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "packet" {
			continue
		}
		var pp pdmlPacket
		if err := dec.DecodeElement(&pp, &se); err != nil {
			tb.Fatalf("PDML packet: %v", err)
		}
		p := packet{number: len(pkts) + 1}
		for i := range pp.Protos {
			walk(&p, &pp.Protos[i], pp.Protos[i].Name == "ethergm")
		}
		pkts = append(pkts, p)
	}

	// The Info column is not part of PDML; get it with -T fields.
	out = runTshark(tb, append([]string{"-r", path, "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info"}, extra...)...)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		num, info, _ := strings.Cut(sc.Text(), "\t")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > len(pkts) {
			tb.Fatalf("tshark -T fields: unexpected line %q", sc.Text())
		}
		pkts[n-1].info = info
	}
	return pkts
}

// walk collects the fields and experts below n; inEtherGM tells whether n is
// inside the ethergm protocol item.
func walk(p *packet, n *pdmlNode, inEtherGM bool) {
	switch {
	case n.Name == "ethergm" && n.XMLName.Local == "proto":
		p.hasProto = true
		inEtherGM = true
	case n.Name == "_ws.malformed":
		p.malformed = true
	case n.Name == "_ws.expert":
		e := expertInfo{}
		for _, c := range n.Children {
			switch {
			case c.Name == "_ws.expert.message":
				e.message = c.Show
			case c.Name == "_ws.lua.error":
				p.luaErrors = append(p.luaErrors, c.ShowName)
			case !strings.HasPrefix(c.Name, "_ws.expert."):
				e.abbr = c.Name
			}
		}
		if strings.HasPrefix(e.abbr, "ethergm.") {
			p.experts = append(p.experts, e)
		}
		return
	case n.Name == "_ws.lua.error" || strings.HasPrefix(n.Show, "Lua Error") || strings.HasPrefix(n.ShowName, "Lua Error"):
		p.luaErrors = append(p.luaErrors, n.Show+n.ShowName)
	case inEtherGM && strings.HasPrefix(n.Name, "ethergm."):
		p.fields = append(p.fields, field{name: n.Name, showName: n.ShowName, show: n.Show, value: n.Value})
	}
	for i := range n.Children {
		walk(p, &n.Children[i], inEtherGM)
	}
}

// capturedFrame is one record of a pcapng file.
type capturedFrame struct {
	data    []byte
	origLen int
}

// readCapture returns the frames of the pcapng file at path.
func readCapture(tb testing.TB, path string) []capturedFrame {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	var frames []capturedFrame
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			tb.Fatalf("%s: record %d: %v", path, len(frames)+1, err)
		}
		frames = append(frames, capturedFrame{data: append([]byte(nil), data...), origLen: ci.Length})
	}
}

// writeCapture writes frames to a new pcapng file in dir with the capture
// package, with fixed timestamps so that the file's bytes depend only on
// the frames. A frame with origLen > len(data) is recorded as truncated.
func writeCapture(tb testing.TB, path string, frames []capturedFrame) {
	tb.Helper()
	w, err := capture.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, f := range frames {
		if err := w.WriteFrame(t0.Add(time.Duration(i)*time.Millisecond), f.data, f.origLen); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// describe returns a short description of a packet for failure messages.
func describe(p *packet) string {
	return fmt.Sprintf("frame %d (%s)", p.number, p.info)
}
