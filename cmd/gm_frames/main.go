package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/cmd/gm_frames/frameset"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/cli"
	"github.com/ethergm/ethergm/wire"
	"github.com/mdlayher/ethernet"
)

// options are the command-line settings.
type options struct {
	unit       string
	remoteMAC  string
	port       int
	remotePort int
	node       uint32
	remoteNode uint32
	session    uint32
	etherType  uint16
	gap        time.Duration
	listen     bool
	count      int
	timeout    time.Duration
	json       string
	cfg        gm.Config
	pcap       *capture.Setting
	iface      string // the interface --unit names
}

const description = `Send one EtherGM frame of every type, or print a summary of every EtherGM
frame received.

Sending (--remote-mac), gm_frames opens the link on the unit's interface
and sends one EtherGM frame of every type to MAC: DATA, a segmented
message, ACKs, a NACK for every reason, PUT, GET, GOT, DATAGRAM, SCOUT
(broadcast), SCOUT_REPLY, CONFIG and CONFIG_ACK, one line per frame sent.

Listening (--listen), it prints one line per EtherGM frame received on any
port: source and destination MAC addresses and the summary Wireshark's
EtherGM dissector shows in its Info column; until --count frames, the
--timeout, or SIGINT/SIGTERM.

With --json, each of those lines is a JSON object instead (JSON Lines).

Exit status: 0 on success, 1 on a failure (no such interface, no
permission to open raw sockets), 2 for a bad command line.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// newCommand returns gm_frames' command line, filling o.
func newCommand(o *options, stdout, stderr io.Writer) *cli.Command {
	c := cli.New("gm_frames", stdout, stderr)
	c.Synopsis(
		"[--unit IFACE] --remote-mac MAC [OPTION]...",
		"[--unit IFACE] --listen [OPTION]...")
	c.Description(description)
	fs := c.Flags
	c.UnitFlag(&o.unit, "the `IFACE` to use: an interface or a unit of one interface (default: $"+gm.EnvUnit+
		", else the only interface that is up)")
	fs.StringVar(&o.remoteMAC, "remote-mac", "", "send the frames to this Ethernet `MAC` address")
	fs.BoolVar(&o.listen, "listen", false, "receive frames and print one summary line per frame")
	c.PortVar(&o.port, "port", 2, "source GM `PORT` of the frames sent, 0..15")
	c.PortVar(&o.remotePort, "remote-port", 2, "target GM `PORT` of the frames sent, 0..15 (mapper frames go to port 1)")
	fs.Uint32Var(&o.node, "node", 1, "source node `ID` of the frames sent")
	fs.Uint32Var(&o.remoteNode, "remote-node", 2, "target node `ID` of the frames sent")
	fs.Uint32Var(&o.session, "session", 0x5e55, "`SESSION` of the reliable frames sent")
	c.EtherTypeVar(&o.etherType, "ethertype", wire.EtherType, "`ETHERTYPE` of the frames, 0x0600..0xFFFF")
	fs.DurationVar(&o.gap, "gap", time.Millisecond, "pause between two frames sent")
	fs.IntVar(&o.count, "count", 0, "with --listen: exit after `N` frames (0: no limit)")
	fs.DurationVar(&o.timeout, "timeout", 0, "with --listen: exit after this `DURATION` (0: no limit)")
	c.JSONFlag(&o.json, "print JSON Lines, one object per frame, to standard output, or to `FILE` with --json=FILE")
	c.StateDirFlag(&o.cfg.StateDir, "the per-host state directory `DIR`, where unit names are looked up (default: $"+
		gm.EnvStateDir+", else "+gm.DefaultStateDir+")")
	o.pcap = c.PcapFlag()
	return c
}

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var o options
	c := newCommand(&o, stdout, stderr)
	if code, done := c.Parse(args); done {
		return code
	}
	if msg := o.check(); msg != "" {
		return c.Usagef("%s", msg)
	}
	u, err := gm.ResolveUnit(o.unit, &o.cfg)
	if err != nil {
		return c.Fail(err)
	}
	if len(u.Interfaces) != 1 {
		return c.Usagef("unit %s has %d interfaces; gm_frames uses one: pass --unit IFACE", u.Name, len(u.Interfaces))
	}
	o.iface = u.Interfaces[0]
	if err := o.run(stdout, stderr); err != nil {
		return c.Fail(err)
	}
	return cli.ExitOK
}

// check validates the options that pflag does not; it returns the usage
// error, "" if there is none.
func (o *options) check() string {
	switch {
	case o.listen && o.remoteMAC != "":
		return "--listen and --remote-mac exclude each other"
	case !o.listen && o.remoteMAC == "":
		return "pass --remote-mac MAC to send, or --listen to receive"
	case o.count < 0:
		return fmt.Sprintf("invalid value \"%d\" for --count: want 0 or more", o.count)
	case o.timeout < 0 || o.gap < 0:
		return "--timeout and --gap must not be negative"
	}
	if o.remoteMAC != "" {
		if mac, err := net.ParseMAC(o.remoteMAC); err != nil || len(mac) != 6 {
			return fmt.Sprintf("invalid value %q for --remote-mac: want an Ethernet address such as 02:00:00:00:00:01", o.remoteMAC)
		}
	}
	return ""
}

func (o *options) run(stdout, stderr io.Writer) (err error) {
	w, err := o.pcap.Open()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	out := &output{text: stdout}
	if o.json != "" {
		jw, closeJSON, err := cli.Create(o.json, stdout)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := closeJSON(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		out.json = json.NewEncoder(jw)
		if o.json == "-" {
			out.text = nil // JSON replaces the text on standard output
		}
	}
	lk, err := link.Open(o.iface, &link.Config{
		EtherType: o.etherType,
		Ports:     link.AllPorts,
	})
	if err != nil {
		return err
	}
	mode := lk.Mode()
	l := w.Wrap(lk) // records every frame sent and received in --pcap's file
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if o.listen {
		return o.receive(l, mode, out, stderr)
	}
	return o.send(l, out)
}

// frameRecord is the JSON form of one line of output.
type frameRecord struct {
	Event     string `json:"event"` // "sent" or "received"
	Name      string `json:"name,omitempty"`
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	EtherType uint16 `json:"ethertype"`
	Bytes     int    `json:"bytes"`
	Summary   string `json:"summary"`
}

// output writes the text lines, the JSON records, or both.
type output struct {
	text io.Writer     // nil: no text
	json *json.Encoder // nil: no JSON
}

func (o *output) record(r *frameRecord, text string) error {
	if o.text != nil {
		if _, err := fmt.Fprintln(o.text, text); err != nil {
			return err
		}
	}
	if o.json != nil {
		return o.json.Encode(r)
	}
	return nil
}

// send sends the frame sample to o.remoteMAC.
func (o *options) send(l link.Endpoint, out *output) error {
	dst, err := net.ParseMAC(o.remoteMAC)
	if err != nil {
		return err // checked by check
	}
	set, err := frameset.Build(&frameset.Params{
		Dst:       [6]byte(dst),
		Src:       [6]byte(l.HardwareAddr()),
		EtherType: o.etherType,
		SrcNode:   o.node,
		DstNode:   o.remoteNode,
		SrcPort:   uint8(o.port),
		DstPort:   uint8(o.remotePort),
		Session:   o.session,
	})
	if err != nil {
		return err
	}
	var sum frameset.Summarizer
	for i, f := range set {
		if i > 0 && o.gap > 0 {
			time.Sleep(o.gap)
		}
		if err := l.Send(f.Bytes); err != nil {
			return fmt.Errorf("sending %s: %w", f.Name, err)
		}
		text := sum.Summary(f.Bytes, o.etherType)
		r := &frameRecord{Event: "sent", Name: f.Name, Src: l.HardwareAddr().String(), Dst: dst.String(),
			EtherType: o.etherType, Bytes: len(f.Bytes), Summary: text}
		if err := out.record(r, fmt.Sprintf("sent %-22s %4d bytes  %s", f.Name, len(f.Bytes), text)); err != nil {
			return err
		}
	}
	if out.text != nil {
		fmt.Fprintf(out.text, "sent %d frames from %s (%s) to %s\n", len(set), l.Name(), l.HardwareAddr(), dst)
	}
	return nil
}

// receive prints a summary of every frame received until o.count frames,
// o.timeout, or SIGINT/SIGTERM.
func (o *options) receive(l link.Endpoint, mode string, out *output, stderr io.Writer) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	stopped := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig:
			close(stopped)
			l.Wake()
		case <-done:
		}
	}()
	var deadline time.Time
	if o.timeout > 0 {
		deadline = time.Now().Add(o.timeout)
	}
	fmt.Fprintf(stderr, "gm_frames: listening on %s (%s), %s\n", l.Name(), l.HardwareAddr(), mode)
	var sum frameset.Summarizer
	var eth ethernet.Frame // the received frame's addresses, for the record
	frames := make([][]byte, 64)
	n := 0
	for o.count <= 0 || n < o.count {
		wait := 100 * time.Millisecond
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			wait = min(wait, left)
		}
		select {
		case <-stopped:
			return nil
		default:
		}
		k, err := l.Wait(frames, wait)
		if err != nil {
			return err
		}
		for _, f := range frames[:k] {
			src, dst := "?", "?" // a frame too short for its Ethernet header
			if eth.UnmarshalBinary(f) == nil {
				src, dst = eth.Source.String(), eth.Destination.String()
			}
			text := sum.Summary(f, o.etherType)
			r := &frameRecord{Event: "received", Src: src, Dst: dst, EtherType: o.etherType, Bytes: len(f), Summary: text}
			if err := out.record(r, src+" > "+dst+" "+text); err != nil {
				return err
			}
			n++
			if o.count > 0 && n >= o.count {
				break
			}
		}
	}
	return nil
}
