package wireshark

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/cmd/gm_frames/frameset"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
)

// buildGmFrames builds cmd/gm_frames into dir and returns the binary's path.
func buildGmFrames(t *testing.T, dir string) string {
	t.Helper()
	// go test puts its own GOROOT/bin first in the PATH of the tests.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	bin := filepath.Join(dir, "gm_frames")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/ethergm/ethergm/cmd/gm_frames")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build gm_frames: %v\n%s", err, out)
	}
	return bin
}

// waitOutput waits until p has printed want, p has exited, or timeout.
func waitOutput(t *testing.T, p *netns.Proc, want string, timeout time.Duration) {
	t.Helper()
	end := time.Now().Add(timeout)
	for !strings.Contains(p.Output(), want) {
		select {
		case <-p.Done():
			t.Fatalf("%v exited before printing %q: %v\n%s", p, want, p.Wait(), p.Output())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("%v has not printed %q after %v:\n%s", p, want, timeout, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntegrationDissector sends one frame of every type with gm_frames
// from host A to host B of a two-host cluster, captures them with dumpcap
// in B and with gm_frames --pcap in A, and checks both captures with the
// dissector against package wire. It also checks gm_frames --listen in B,
// and that corrupted copies of captured frames raise the expert infos.
func TestIntegrationDissector(t *testing.T) {
	needTshark(t)
	dumpcap, err := exec.LookPath("dumpcap")
	if err != nil {
		t.Fatalf("dumpcap (part of tshark's packages) not found: %v", err)
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	a, b := c.Hosts[0], c.Hosts[1]
	dir := t.TempDir()
	bin := buildGmFrames(t, dir)
	capA := filepath.Join(dir, "a.pcapng")
	capB := filepath.Join(dir, "b.pcapng")

	// The expected frames: gm_frames' sample with these endpoints.
	params := frameset.Params{
		Dst: [6]byte(b.MACs[0]), Src: [6]byte(a.MACs[0]),
		SrcNode: 1, DstNode: 2, SrcPort: 2, DstPort: 2, Session: 0x5e55,
	}
	sample, err := frameset.Build(&params)
	if err != nil {
		t.Fatal(err)
	}

	// dumpcap stops by itself once it has written every frame of the
	// sample (only gm_frames in A sends EtherGM frames on this link).
	dc, err := b.Start(dumpcap, "-i", b.Ifaces[0], "-f", "ether proto 0x88b5", "-c", strconv.Itoa(len(sample)), "-w", capB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dc.Kill() })
	waitOutput(t, dc, "File:", 15*time.Second)

	listener, err := b.Start(bin, "--unit", b.Ifaces[0], "--listen", "--count", "100", "--timeout", "20s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Kill() })
	waitOutput(t, listener, "listening on", 15*time.Second)

	out, err := a.Run(bin, "--unit", a.Ifaces[0], "--remote-mac", b.MACs[0].String(), "--pcap", capA)
	if err != nil {
		t.Fatalf("gm_frames send: %v\n%s", err, out)
	}
	t.Logf("gm_frames in %s:\n%s", a.Name, out)

	// Wait until the listener has printed the last frame of the sample,
	// then stop it and the capture.
	var sum frameset.Summarizer
	var wantLines []string
	for _, f := range sample {
		wantLines = append(wantLines, a.MACs[0].String()+" > "+net.HardwareAddr(f.Bytes[0:6]).String()+" "+sum.Summary(f.Bytes, wire.EtherType))
	}
	waitOutput(t, listener, wantLines[len(wantLines)-1], 15*time.Second)
	if err := listener.Stop(); err != nil {
		t.Errorf("stopping the listener: %v", err)
	}
	// Wait for dumpcap to write the whole sample and exit: it may read
	// through a TPACKET_V3 ring, whose blocks reach it only when a read
	// timeout retires them, so the last frames can come late.
	select {
	case <-dc.Done():
		if err := dc.Wait(); err != nil {
			t.Errorf("dumpcap: %v\n%s", err, dc.Output())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("dumpcap has not captured the %d frames of the sample after 20s:\n%s", len(sample), dc.Output())
		if err := dc.Stop(); err != nil {
			t.Errorf("stopping dumpcap: %v\n%s", err, dc.Output())
		}
	}

	// gm_frames --listen printed the summary of every frame of the sample.
	got := strings.Split(strings.TrimSpace(listener.Output()), "\n")
	for _, w := range wantLines {
		if !slices.Contains(got, w) {
			t.Errorf("gm_frames --listen did not print %q; it printed:\n%s", w, listener.Output())
		}
	}

	// Both captures decode, field by field, as package wire decodes them,
	// and hold every type.
	for _, capFile := range []string{capA, capB} {
		seen := checkValidCapture(t, capFile)
		checkAllTypes(t, filepath.Base(capFile), seen)
	}

	// Every frame of the sample arrived unchanged in B's capture and was
	// recorded by A's tap.
	framesA, framesB := readCapture(t, capA), readCapture(t, capB)
	t.Logf("%s's --pcap capture holds %d frames, %s's dumpcap capture %d", a.Name, len(framesA), b.Name, len(framesB))
	if dir := os.Getenv("ETHERGM_KEEP_CAPTURES"); dir != "" {
		for _, f := range []string{capA, capB} {
			if b, err := os.ReadFile(f); err == nil {
				_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
			}
		}
	}
	for _, f := range sample {
		for name, frames := range map[string][]capturedFrame{"a.pcapng": framesA, "b.pcapng": framesB} {
			if !slices.ContainsFunc(frames, func(c capturedFrame) bool { return sameFrame(c.data, f.Bytes) }) {
				t.Errorf("%s: %s frame not captured", name, f.Name)
			}
		}
	}

	// Corrupted copies of captured frames raise the expert infos.
	checkBroken(t, capturedBroken(t, framesB))
}

// sameFrame reports whether captured is frame, possibly with Ethernet
// padding.
func sameFrame(captured, frame []byte) bool {
	return bytes.HasPrefix(captured, frame) && (len(captured) == len(frame) || len(captured) <= 60)
}

// capturedBroken derives broken frames from real captured ones: a bad CRC,
// an unknown version and a capture truncated by the snap length.
func capturedBroken(t *testing.T, frames []capturedFrame) []brokenCase {
	t.Helper()
	find := func(ty wire.Type) []byte {
		for _, f := range frames {
			h, err := wire.ParseFrameCRC(f.data, wire.EtherType)
			if err == nil && h.Type() == ty && h.TargetPort() != wire.PortNone {
				return slices.Clone(f.data)
			}
		}
		t.Fatalf("no valid %v frame in the capture", ty)
		return nil
	}
	badCRC := find(wire.TypeData)
	badCRC[len(badCRC)-3] ^= 0x01 // flip one payload bit, fix nothing
	badVersion := find(wire.TypeAck)
	header(badVersion)[wire.OffVersion] = 9
	header(badVersion).UpdateCRC()
	long := find(wire.TypeDataMiddle)
	return []brokenCase{
		{name: "captured DATA with a payload bit flipped", frame: badCRC, wireErr: wire.ErrCRC,
			experts: []string{"ethergm.crc.bad"}, crcStatus: "0", info: "[BAD CRC]"},
		{name: "captured ACK with version 9", frame: badVersion, wireErr: wire.ErrVersion,
			experts: []string{"ethergm.version.unknown"}, crcStatus: "1", info: "[version 9]"},
		{name: "captured DATA_MIDDLE truncated to 200 bytes", frame: long[:200], origLen: len(long),
			wireErr: wire.ErrLength, experts: []string{"ethergm.truncated"}, crcStatus: "2", info: "[TRUNCATED]"},
	}
}
