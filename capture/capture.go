package capture

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

const (
	// SnapLen is the longest frame recorded whole; longer frames are cut to
	// SnapLen bytes and keep their original length in the record.
	SnapLen = 65535

	// EnvVar is the environment variable FromEnv reads: the path of the
	// capture file, in which "%p" stands for the process id.
	EnvVar = "ETHERGM_PCAP"

	// FlushInterval bounds how long a record stays in the Writer's buffer
	// while frames keep arriving: Tap (which every endpoint of Wrap
	// calls) flushes the buffer to the file when the last flush is older
	// than this.
	FlushInterval = 200 * time.Millisecond
)

// ErrClosed is returned by WriteFrame and Flush after Close. Tap ignores
// frames after Close: a link may still deliver frames while it shuts down.
var ErrClosed = errors.New("capture: writer closed")

// Writer writes Ethernet frames to a pcapng file. It is safe for concurrent
// use by multiple goroutines. The zero value is not usable; create one with
// Open, NewWriter, FromEnv or Setting.Open. The methods of a nil *Writer do
// nothing, so a program can pass around the nil result of FromEnv when
// capture is off.
type Writer struct {
	// mu serialises all writes and guards the fields below.
	mu        sync.Mutex
	ng        *pcapgo.NgWriter
	out       io.Writer // the destination, closed by Close if it is an io.Closer
	err       error     // first write error, reported by Close
	closed    bool
	frames    int
	lastFlush time.Time
	now       func() time.Time
	shared    bool // returned by FromEnv: Close releases one reference
}

// env holds the process-wide Writer of FromEnv.
var env struct {
	// Mutex guards w and refs.
	sync.Mutex
	w    *Writer
	refs int // FromEnv results not yet closed
}

// Open creates (or truncates) the file at path and returns a Writer that
// records frames into it as pcapng. The caller must call Close to flush the
// last records and close the file.
func Open(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	w, err := NewWriter(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// NewWriter returns a Writer that writes pcapng to out, starting with the
// section and interface blocks. Close flushes the Writer and, if out is an
// io.Closer, closes it.
func NewWriter(out io.Writer) (*Writer, error) {
	intf := pcapgo.NgInterface{
		Name:                "ethergm",
		Description:         "EtherGM frames recorded by the capture package",
		LinkType:            layers.LinkTypeEthernet,
		SnapLength:          SnapLen,
		TimestampResolution: 9,
	}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Application: "EtherGM capture (" + progName() + ")",
		OS:          "linux",
	}}
	// pcapgo buffers the records (4 KiB); Flush and Close push them out.
	ng, err := pcapgo.NewNgWriterInterface(out, intf, opts)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	w := &Writer{ng: ng, out: out, now: time.Now}
	w.lastFlush = w.now()
	if err := w.flushLocked(); err != nil {
		return nil, err
	}
	return w, nil
}

func progName() string {
	if len(os.Args) == 0 {
		return "?"
	}
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// Tap records frame, stamped with the current time: what the endpoints of
// Wrap call for every frame. outgoing tells whether the frame was sent or
// received; pcapgo cannot record it (see the package documentation), so it
// is ignored. Tap does not retain frame. Errors are kept and reported by
// Close; frames arriving after Close are ignored.
func (w *Writer) Tap(frame []byte, outgoing bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	now := w.now()
	w.err = w.writeLocked(now, frame, len(frame))
	if w.err == nil && now.Sub(w.lastFlush) >= FlushInterval {
		w.lastFlush = now
		w.err = w.flushLocked()
	}
}

// WriteFrame records frame with timestamp ts as a frame of origLen bytes on
// the wire; origLen larger than len(frame) records a frame truncated by the
// capture (tests use it to build such captures). Frames longer than SnapLen
// are cut to SnapLen. It does not retain frame.
func (w *Writer) WriteFrame(ts time.Time, frame []byte, origLen int) error {
	if w == nil {
		return nil
	}
	if origLen < len(frame) {
		return fmt.Errorf("capture: original length %d shorter than the %d bytes given", origLen, len(frame))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	w.err = w.writeLocked(ts, frame, origLen)
	return w.err
}

func (w *Writer) writeLocked(ts time.Time, frame []byte, origLen int) error {
	if len(frame) > SnapLen {
		frame = frame[:SnapLen]
	}
	ci := gopacket.CaptureInfo{
		Timestamp:     ts,
		CaptureLength: len(frame),
		Length:        origLen,
	}
	if err := w.ng.WritePacket(ci, frame); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	w.frames++
	return nil
}

// Flush writes the buffered records to the file.
func (w *Writer) Flush() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	w.lastFlush = w.now()
	w.err = w.flushLocked()
	return w.err
}

func (w *Writer) flushLocked() error {
	if err := w.ng.Flush(); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// Frames returns the number of frames recorded so far.
func (w *Writer) Frames() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.frames
}

// Close flushes the buffered records and closes the file. It returns the
// first error met while writing, if any. Calling Close again returns nil.
// For the shared Writer of FromEnv, Close releases the caller's reference:
// it only flushes until the last reference is released, which closes the
// file.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	if w.shared {
		env.Lock()
		if env.w == w && env.refs > 1 {
			env.refs--
			env.Unlock()
			return w.Flush()
		}
		if env.w == w {
			env.w, env.refs = nil, 0
		}
		env.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.err
	if err == nil {
		err = w.flushLocked()
	}
	if c, ok := w.out.(io.Closer); ok {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("capture: %w", cerr)
		}
	}
	return err
}

// ExpandPath returns path with every "%p" replaced by pid, the form
// ETHERGM_PCAP uses to give each process its own file.
func ExpandPath(path string, pid int) string {
	return strings.ReplaceAll(path, "%p", strconv.Itoa(pid))
}

// FromEnv returns a Writer for the file named by the environment variable
// ETHERGM_PCAP (see EnvVar), with "%p" replaced by the process id, or nil and
// no error when the variable is unset or empty. This is how any program
// built on the library gets capture without a flag of its own.
//
// The Writer is shared by the whole process: the first call creates (or
// truncates) the file, later calls return the same Writer until every
// caller has closed it, so that all the links of a process record into one
// file. Each caller must call Close exactly once. Put "%p" in the name when
// several processes capture at the same time.
func FromEnv() (*Writer, error) {
	path := os.Getenv(EnvVar)
	if path == "" {
		return nil, nil
	}
	env.Lock()
	defer env.Unlock()
	if env.w != nil {
		env.refs++
		return env.w, nil
	}
	w, err := Open(ExpandPath(path, os.Getpid()))
	if err != nil {
		return nil, err
	}
	w.shared = true
	env.w, env.refs = w, 1
	return w, nil
}

// Setting is the value of the --pcap flag registered by Flag.
type Setting struct {
	// Path is the capture file named by --pcap, empty if the flag was not
	// given.
	Path string
}

// Flag registers the flag --pcap FILE on fs (the standard library's flag
// package accepts -pcap too) and returns the setting it fills in. After
// fs.Parse, call the setting's Open to get the Writer whose Wrap decorates
// the links.
func Flag(fs *flag.FlagSet) *Setting {
	s := new(Setting)
	fs.StringVar(&s.Path, "pcap", "",
		"record every EtherGM frame sent or received in pcapng `FILE` (default: $"+EnvVar+", %p = pid)")
	return s
}

// Open returns a Writer for the --pcap file if the flag was given, else the
// result of FromEnv: nil and no error when capture is off. The nil *Writer
// is safe to use (its methods do nothing, its Wrap returns the endpoint it
// is given).
func (s *Setting) Open() (*Writer, error) {
	if s == nil || s.Path == "" {
		return FromEnv()
	}
	return Open(ExpandPath(s.Path, os.Getpid()))
}
