package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/cmd/gm_frames/frameset"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/wire"
)

// options are the command-line settings.
type options struct {
	iface     string
	to        string
	port      uint
	fromPort  uint
	node      uint
	toNode    uint
	session   uint
	etherType uint
	gap       time.Duration
	listen    bool
	count     int
	timeout   time.Duration
	pcap      *capture.Setting
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gm_frames", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.iface, "i", "", "network `interface` to use (required)")
	fs.StringVar(&o.iface, "iface", "", "same as -i")
	fs.StringVar(&o.to, "to", "", "destination `MAC` address of the frames (send mode)")
	fs.UintVar(&o.port, "port", 2, "target GM `port` of the frames (mapper frames use port 1)")
	fs.UintVar(&o.fromPort, "from-port", 2, "source GM `port` of the frames")
	fs.UintVar(&o.node, "node", 1, "source node `id` of the frames")
	fs.UintVar(&o.toNode, "to-node", 2, "target node `id` of the frames")
	fs.UintVar(&o.session, "session", 0x5e55, "`session` of the reliable frames")
	fs.UintVar(&o.etherType, "ethertype", uint(wire.EtherType), "`EtherType` of the frames")
	fs.DurationVar(&o.gap, "gap", time.Millisecond, "pause between two frames sent")
	fs.BoolVar(&o.listen, "listen", false, "receive frames and print one summary line per frame")
	fs.IntVar(&o.count, "count", 0, "listen: exit after `N` frames (0: no limit)")
	fs.DurationVar(&o.timeout, "timeout", 0, "listen: exit after this `duration` (0: no limit)")
	o.pcap = capture.Flag(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: gm_frames -i IFACE --to MAC [flags]    send one frame of every type\n"+
			"       gm_frames -i IFACE --listen [flags]    print a summary of every frame received\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.check(fs); err != nil {
		fmt.Fprintf(stderr, "gm_frames: %v\n", err)
		fs.Usage()
		return 2
	}
	if err := o.run(stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "gm_frames: %v\n", err)
		return 1
	}
	return 0
}

// check validates the options.
func (o *options) check(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.iface == "":
		return errors.New("-i IFACE is required")
	case !o.listen && o.to == "":
		return errors.New("--to MAC is required (or --listen)")
	case o.port > 0xFF || o.fromPort > 0xFF:
		return errors.New("ports must be 0..255")
	case o.node > 0xFFFFFFFF || o.toNode > 0xFFFFFFFF || o.session > 0xFFFFFFFF:
		return errors.New("node ids and session must fit in 32 bits")
	case o.etherType == 0 || o.etherType > 0xFFFF:
		return errors.New("--ethertype must be 1..0xFFFF")
	}
	return nil
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
	l, err := link.Open(o.iface, &link.Config{
		EtherType: uint16(o.etherType),
		Ports:     link.AllPorts,
		Tap:       w.TapFunc(),
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if o.listen {
		return o.receive(l, stdout, stderr)
	}
	return o.send(l, stdout)
}

// send sends the frame sample to o.to.
func (o *options) send(l *link.Link, stdout io.Writer) error {
	dst, err := net.ParseMAC(o.to)
	if err != nil || len(dst) != 6 {
		return fmt.Errorf("--to %q: not an Ethernet MAC address", o.to)
	}
	set, err := frameset.Build(&frameset.Params{
		Dst:       [6]byte(dst),
		Src:       [6]byte(l.HardwareAddr()),
		EtherType: uint16(o.etherType),
		SrcNode:   uint32(o.node),
		DstNode:   uint32(o.toNode),
		SrcPort:   uint8(o.fromPort),
		DstPort:   uint8(o.port),
		Session:   uint32(o.session),
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
		fmt.Fprintf(stdout, "sent %-22s %4d bytes  %s\n", f.Name, len(f.Bytes), sum.Summary(f.Bytes, uint16(o.etherType)))
	}
	fmt.Fprintf(stdout, "sent %d frames from %s (%s) to %s\n", len(set), l.Name(), l.HardwareAddr(), o.to)
	return nil
}

// receive prints a summary of every frame received until o.count frames,
// o.timeout, or SIGINT/SIGTERM.
func (o *options) receive(l *link.Link, stdout, stderr io.Writer) error {
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
	fmt.Fprintf(stderr, "gm_frames: listening on %s (%s), %s\n", l.Name(), l.HardwareAddr(), l.Mode())
	var sum frameset.Summarizer
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
			fmt.Fprintf(stdout, "%s > %s %s\n", net.HardwareAddr(f[6:12]), net.HardwareAddr(f[0:6]),
				sum.Summary(f, uint16(o.etherType)))
			n++
			if o.count > 0 && n >= o.count {
				break
			}
		}
	}
	return nil
}
