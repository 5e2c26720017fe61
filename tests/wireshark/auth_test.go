package wireshark

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// TestDissectorClusterKey: sealed frames (docs/PROTOCOL.md section 19) show
// the AUTH flag and the trailer's partition, key id and tag, with a good CRC
// and no complaint about the bytes after the payload; padding after the
// trailer is shown as padding.
func TestDissectorClusterKey(t *testing.T) {
	t.Parallel()
	needTshark(t)
	k, err := auth.NewKey([]byte("ethergm-test-cluster-key-0123456"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(7, k)
	if err != nil {
		t.Fatal(err)
	}
	var frames []capturedFrame
	// The sample frames, and a full DATA frame at MTU 1500 with a key,
	// long enough for GHASH-AES.
	long := wire.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}, wire.EtherType,
		&wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, Size: 14, TargetNode: 2, SourceNode: 1,
			Session: 5, Seq: 9, MsgLen: 1436}, make([]byte, 1436))
	for i, ty := range []wire.Type{wire.TypeData, wire.TypePut, wire.TypeAck, wire.TypeScout, wire.TypeData} {
		f := sampleFrame(t, ty)
		if i == 4 {
			f = long
		}
		b := append(f, make([]byte, auth.TrailerLen+3*(i%2))...)
		n := a.Seal(b)
		if n == 0 {
			t.Fatalf("%v: Seal refused the sample frame", ty)
		}
		if i%2 == 1 {
			n += 3 // padding after the trailer
		}
		frames = append(frames, capturedFrame{data: b[:n], origLen: n})
	}
	path := filepath.Join(t.TempDir(), "sealed.pcapng")
	writeCapture(t, path, frames)
	out := runTshark(t, "-r", path, "-T", "fields", "-E", "separator=;",
		"-e", "ethergm.flags.auth", "-e", "ethergm.trailer.partition", "-e", "ethergm.trailer.keyid",
		"-e", "ethergm.trailer.tag", "-e", "ethergm.crc.status", "-e", "ethergm.padding", "-e", "ethergm.trailer.mac",
		"-e", "_ws.expert.message")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames:\n%s", len(lines), len(frames), out)
	}
	for i, line := range lines {
		fl := strings.Split(line, ";")
		n := len(frames[i].data)
		if i%2 == 1 {
			n -= 3
		}
		tag := frames[i].data[n-auth.TagLen : n]
		// The trailer is not "bytes after the payload"; padding after it
		// is (3 of them, in these frames longer than the Ethernet minimum).
		wantPad, trailing := "", strings.Contains(fl[len(fl)-1], "after the payload")
		if i%2 == 1 {
			wantPad = "000000"
			trailing = !strings.Contains(fl[len(fl)-1], "3 bytes after the payload")
		}
		// The MAC the dissector names follows the covered length.
		wantMAC := "SipHash-2-4-128"
		if n-auth.TagLen >= auth.GHASHMin {
			wantMAC = "GHASH-AES"
		}
		if len(fl) != 8 || fl[6] != wantMAC || (fl[0] != "1" && fl[0] != "True") || fl[1] != "7" || fl[2] != "0xa1" ||
			strings.ReplaceAll(fl[3], ":", "") != hexString(tag) || fl[4] != "1" || strings.ReplaceAll(fl[5], ":", "") != wantPad || trailing {
			t.Errorf("frame %d: tshark shows %q", i+1, line)
		}
	}
	if out := runTshark(t, "-r", path, "-Y", "ethergm.trailer.partition == 7 && ethergm.flags.auth", "-T", "fields", "-e", "frame.number"); strings.Count(string(out), "\n") != len(frames) {
		t.Errorf("the partition filter matches:\n%s", out)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	s := make([]byte, 0, 2*len(b))
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}
