package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// record is one frame read back from a capture.
type record struct {
	data    []byte
	origLen int
	ts      time.Time
}

func readAll(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatalf("NewNgReader: %v", err)
	}
	if lt := r.LinkType(); lt != layers.LinkTypeEthernet {
		t.Errorf("link type %v, want Ethernet", lt)
	}
	var recs []record
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatalf("ReadPacketData after %d records: %v", len(recs), err)
		}
		recs = append(recs, record{data: data, origLen: ci.Length, ts: ci.Timestamp})
	}
}

// frame returns a recognisable frame of n bytes numbered id.
func frame(id uint32, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	binary.BigEndian.PutUint16(b[12:], 0x88B5)
	binary.BigEndian.PutUint32(b[14:], id)
	return b
}

func TestWriteReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcapng")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	tests := []struct {
		name    string
		frame   []byte
		origLen int
		want    []byte
		wantLen int
	}{
		{name: "minimum", frame: frame(1, 60), origLen: 60, want: frame(1, 60), wantLen: 60},
		{name: "odd length", frame: frame(2, 61), origLen: 61, want: frame(2, 61), wantLen: 61},
		{name: "jumbo", frame: frame(3, 9014), origLen: 9014, want: frame(3, 9014), wantLen: 9014},
		{name: "truncated by caller", frame: frame(4, 100)[:80], origLen: 100, want: frame(4, 100)[:80], wantLen: 100},
		{name: "beyond snaplen", frame: frame(5, SnapLen+10), origLen: SnapLen + 10,
			want: frame(5, SnapLen+10)[:SnapLen], wantLen: SnapLen + 10},
	}
	for _, tt := range tests {
		if err := w.WriteFrame(ts, tt.frame, tt.origLen); err != nil {
			t.Fatalf("%s: WriteFrame: %v", tt.name, err)
		}
	}
	if err := w.WriteFrame(ts, frame(9, 60), 59); err == nil {
		t.Error("WriteFrame with origLen < len(frame): no error")
	}
	w.Tap(frame(6, 64), true)
	w.Tap(frame(7, 64), false)
	if got := w.Frames(); got != len(tests)+2 {
		t.Errorf("Frames() = %d, want %d", got, len(tests)+2)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	w.Tap(frame(8, 64), true) // ignored after Close
	if err := w.WriteFrame(ts, frame(8, 64), 64); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteFrame after Close: %v, want ErrClosed", err)
	}
	if err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}

	recs := readAll(t, path)
	if len(recs) != len(tests)+2 {
		t.Fatalf("read %d records, want %d", len(recs), len(tests)+2)
	}
	for i, tt := range tests {
		r := recs[i]
		if !bytes.Equal(r.data, tt.want) {
			t.Errorf("%s: data differs (len %d, want %d)", tt.name, len(r.data), len(tt.want))
		}
		if r.origLen != tt.wantLen {
			t.Errorf("%s: original length %d, want %d", tt.name, r.origLen, tt.wantLen)
		}
		if !r.ts.Equal(ts) {
			t.Errorf("%s: timestamp %v, want %v", tt.name, r.ts, ts)
		}
	}
	for i, id := range []uint32{6, 7} {
		r := recs[len(tests)+i]
		if !bytes.Equal(r.data, frame(id, 64)) {
			t.Errorf("tapped frame %d differs", id)
		}
		if time.Since(r.ts) > time.Minute || time.Since(r.ts) < 0 {
			t.Errorf("tapped frame %d: timestamp %v is not now", id, r.ts)
		}
	}
}

// TestConcurrentTap taps from a sender and a receiver goroutine at once, as
// the link does; run it with -race.
func TestConcurrentTap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcapng")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, perG = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 128)
			for i := range perG {
				copy(buf, frame(uint32(g<<16|i), len(buf)))
				w.Tap(buf, g%2 == 0)
				if i%100 == 0 {
					if err := w.Flush(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, path)
	if len(recs) != goroutines*perG {
		t.Fatalf("read %d records, want %d", len(recs), goroutines*perG)
	}
	seen := make(map[uint32]bool)
	for _, r := range recs {
		id := binary.BigEndian.Uint32(r.data[14:])
		if seen[id] {
			t.Fatalf("frame %#x recorded twice", id)
		}
		seen[id] = true
		if !bytes.Equal(r.data, frame(id, 128)) {
			t.Fatalf("frame %#x corrupted", id)
		}
	}
}

// TestPeriodicFlush checks that Tap pushes records to the file once
// FlushInterval has passed, so a capture is readable while it runs.
func TestPeriodicFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.pcapng")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := time.Unix(1000, 0)
	w.mu.Lock()
	w.now = func() time.Time { return now }
	w.lastFlush = now
	w.mu.Unlock()
	w.Tap(frame(1, 60), true)
	if n := len(readAll(t, path)); n != 0 {
		t.Fatalf("%d records visible before FlushInterval", n)
	}
	now = now.Add(FlushInterval)
	w.Tap(frame(2, 60), true)
	if n := len(readAll(t, path)); n != 2 {
		t.Fatalf("%d records visible after FlushInterval, want 2", n)
	}
}

func TestNilWriter(t *testing.T) {
	var w *Writer
	w.Tap(frame(1, 60), true)
	if ep := w.Wrap(nil); ep != nil {
		t.Error("nil Writer: Wrap(nil) != nil")
	}
	if err := w.WriteFrame(time.Now(), frame(1, 60), 60); err != nil {
		t.Error(err)
	}
	if err := w.Flush(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if w.Frames() != 0 {
		t.Error("nil Writer: Frames() != 0")
	}
}

func TestOpenError(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir.pcapng")); err == nil {
		t.Error("Open in a missing directory: no error")
	}
}

func TestExpandPath(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"/tmp/egm-%p.pcapng", "/tmp/egm-42.pcapng"},
		{"/tmp/egm.pcapng", "/tmp/egm.pcapng"},
		{"%p/%p", "42/42"},
	}
	for _, tt := range tests {
		if got := ExpandPath(tt.in, 42); got != tt.want {
			t.Errorf("ExpandPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvVar, "")
	w, err := FromEnv()
	if w != nil || err != nil {
		t.Fatalf("FromEnv with %s unset = %v, %v; want nil, nil", EnvVar, w, err)
	}

	t.Setenv(EnvVar, filepath.Join(dir, "egm-%p.pcapng"))
	w, err = FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	// A second user of the library in the same process shares the file.
	w2, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if w2 != w {
		t.Fatal("second FromEnv returned another Writer")
	}
	w.Tap(frame(1, 60), false)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2.Tap(frame(2, 60), true) // still open for the second user
	if err := w2.Flush(); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "egm-"+strconv.Itoa(os.Getpid())+".pcapng")
	if n := len(readAll(t, want)); n != 2 {
		t.Errorf("%s holds %d records after the first Close, want 2", want, n)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	w2.Tap(frame(3, 60), true) // closed now: ignored
	if n := len(readAll(t, want)); n != 2 {
		t.Errorf("%s holds %d records, want 2", want, n)
	}

	// After the last Close, FromEnv starts a new file.
	w3, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if w3 == w {
		t.Error("FromEnv after the last Close returned the closed Writer")
	}
	if err := w3.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, want)); n != 0 {
		t.Errorf("%s holds %d records after a new FromEnv, want 0", want, n)
	}
}

func TestFlag(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvVar, filepath.Join(dir, "env.pcapng"))
	tests := []struct {
		name string
		args []string
		want string // file the Writer writes, "" for none
	}{
		{name: "flag", args: []string{"--pcap", filepath.Join(dir, "flag.pcapng")}, want: "flag.pcapng"},
		{name: "single dash", args: []string{"-pcap=" + filepath.Join(dir, "one.pcapng")}, want: "one.pcapng"},
		{name: "environment", args: nil, want: "env.pcapng"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			s := Flag(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			w, err := s.Open()
			if err != nil {
				t.Fatal(err)
			}
			w.Tap(frame(1, 60), true)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if n := len(readAll(t, filepath.Join(dir, tt.want))); n != 1 {
				t.Errorf("%s holds %d records, want 1", tt.want, n)
			}
		})
	}

	t.Setenv(EnvVar, "")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	s := Flag(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	w, err := s.Open()
	if w != nil || err != nil {
		t.Errorf("no flag, no environment: Open() = %v, %v; want nil, nil", w, err)
	}
}
