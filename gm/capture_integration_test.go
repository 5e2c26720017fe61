package gm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// TestIntegrationCaptureEnv opens two ports with ETHERGM_PCAP set, each
// decorated with the process's capture.FromEnv writer (the way a program
// opts in: gm itself does not capture), sends a message from one to the
// other, closes both and reads the pcapng file back: it holds the DATA
// frame (as sent by A and as received by B) and B's ACK.
func TestIntegrationCaptureEnv(t *testing.T) {
	pattern := filepath.Join(t.TempDir(), "cap-%p.pcapng")
	t.Setenv(capture.EnvVar, pattern)
	var writers []*capture.Writer
	pr := newPair(t, netns.Options{Hosts: 2}, func(cfg *gm.Config) {
		w, err := capture.FromEnv()
		if err != nil || w == nil {
			t.Fatalf("capture.FromEnv: %v, %v", w, err)
		}
		writers = append(writers, w)
		cfg.WrapLink = w.Wrap
	})
	size := gm.MinSizeForLength(200)
	if err := pr.b.ProvideReceiveBuffer(make([]byte, 256), size, gm.LowPriority, 0); err != nil {
		t.Fatal(err)
	}
	lb := startLoop(pr.b, nil)
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	comps := newCompletions()
	msg := pattern200()
	if err := pr.a.SendWithCallback(msg, size, len(msg), gm.LowPriority, pr.bn, 4, comps.cb, 1); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 1, 5*time.Second); c[0].st != gm.Success {
		t.Fatalf("send: %v", c[0].st)
	}
	la.Stop()
	lb.Stop()
	if err := pr.a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pr.b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range writers {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}

	path := strings.ReplaceAll(pattern, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("capture file: %v", err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var data, acks, frames int
	for {
		b, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		h, err := wire.ParseFrame(b, wire.EtherType)
		if err != nil {
			t.Fatalf("frame %d: %v", frames, err)
		}
		if !h.CheckCRC() {
			t.Errorf("frame %d: bad CRC", frames)
		}
		switch {
		case h.Type() == wire.TypeData && h.SourceNode() == uint32(pr.an) && h.SourcePort() == 2 &&
			h.TargetNode() == uint32(pr.bn) && h.TargetPort() == 4:
			if string(h.Payload()) != string(msg) {
				t.Errorf("DATA payload differs")
			}
			data++
		case h.Type() == wire.TypeAck && h.SourceNode() == uint32(pr.bn) && h.TargetPort() == 2:
			acks++
		}
	}
	// Both ports record into the process's one file: A's copy of the DATA
	// frame as sent and B's as received, likewise for the ACK.
	if data < 2 || acks < 1 {
		t.Fatalf("%d frames: %d DATA, %d ACK; want the DATA frame from both sides and an ACK", frames, data, acks)
	}
	t.Logf("%s: %d frames, %d DATA, %d ACK", filepath.Base(path), frames, data, acks)
}

func pattern200() []byte {
	b := make([]byte, 200)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// sealedSends records, through a capture decorator in memory
// (cfg.WrapLink), the frames a port opened with cfg sends, and returns a
// function that gives those keep selects as they went on the wire: sealed
// with the port's key (a capture records the frames a link is handed, before
// it seals them; sealing is deterministic, so the copy sealed here is the
// frame the link sent). A frame the capture holds without wire.FlagAuth was
// sent, one with the flag was received (a link hands over what it opened).
func sealedSends(t *testing.T, cfg *gm.Config, key *auth.Authenticator, keep func(wire.Header) bool) func() [][]byte {
	t.Helper()
	buf := new(syncBuffer)
	w, err := capture.NewWriter(buf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WrapLink = w.Wrap
	return func() [][]byte {
		t.Helper()
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewNgReader(strings.NewReader(buf.String()), pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		var sent [][]byte
		for {
			b, _, err := r.ReadPacketData()
			if errors.Is(err, io.EOF) {
				return sent
			}
			if err != nil {
				t.Fatal(err)
			}
			h, err := wire.ParseFrame(b, wire.EtherType)
			if err != nil || h.Flags()&wire.FlagAuth != 0 || !keep(h) {
				continue
			}
			f := append(bytes.Clone(b), make([]byte, auth.TrailerLen)...)
			n := key.Seal(f)
			if n == 0 {
				t.Fatalf("a captured frame of %d bytes does not seal", len(b))
			}
			sent = append(sent, f[:n])
		}
	}
}
