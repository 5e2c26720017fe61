// Command put_get shows GM's remote memory access (gm_put and gm_get) with
// EtherGM: a server exposes a buffer, a client writes into it and reads it
// back.
//
// Usage:
//
//	put_get --serve [--port N] [--unit NAME] [--hostname NAME] [--state-dir DIR] [--map-file FILE]
//	put_get --remote-host HOST [--remote-port N] [--bytes N] [--port N] [--unit NAME] [--hostname NAME] [--state-dir DIR] [--map-file FILE]
//
// The server registers a buffer (RegisterMemory), allows remote access
// (AllowRemoteMemoryAccess) and waits for a client. The exchange:
//
//  1. the client sends "hello"; the server answers with the buffer's
//     8-byte RemotePtr (pointers travel in messages, as in GM);
//  2. the client puts --bytes of a pattern at that pointer and waits for the
//     put's callback (the data is in the server's memory);
//  3. it gets the same range back into a second buffer and compares;
//  4. it sends "done"; the server, which saw no event for the put, checks
//     its buffer, answers "ok" (or what is wrong) and exits.
//
// Both exit 0 if every byte arrived where it should.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ethergm/ethergm/gm"
)

func main() {
	serve := flag.Bool("serve", false, "run the server")
	to := flag.String("remote-host", "", "the server `HOST`, a host name of the node map (client)")
	toPort := flag.Int("remote-port", 4, "server port id (client)")
	n := flag.Int("bytes", 40000, "bytes to put and get (client; at most the server's 1 MiB buffer)")
	unit := flag.String("unit", "", "unit (interface list or units-file name); default: the only interface that is up")
	port := flag.Int("port", 0, "port id to open (default 4 for the server, 2 for the client)")
	host := flag.String("hostname", "", "this host's `NAME` in the node map (default $ETHERGM_HOST, else the kernel's host name)")
	state := flag.String("state-dir", "", "the state directory `DIR` (default $ETHERGM_STATE_DIR, else "+gm.DefaultStateDir+")")
	mapFile := flag.String("map-file", "", "the node map `FILE` (default $ETHERGM_MAP, else DIR/map)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Parse()
	cfg := &gm.Config{Host: *host, StateDir: *state, MapFile: *mapFile, ProgressTimeout: *timeout}
	var err error
	switch {
	case *serve:
		err = server(*unit, pick(*port, 4), cfg, *timeout)
	case *to != "":
		err = client(*unit, pick(*port, 2), cfg, *to, *toPort, *n, *timeout)
	default:
		fmt.Fprintln(os.Stderr, "put_get: give --serve or --remote-host HOST")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "put_get:", err)
		os.Exit(1)
	}
}

func pick(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// bufLen is the size of the server's exposed buffer.
const bufLen = 1 << 20

// msgSize is the size class of every message both sides send and of every
// buffer they provide: GM matches a message with a buffer of exactly its
// size class, so short messages travel in this class too.
var msgSize = gm.MinSizeForLength(16)

// pattern is the byte the client writes at offset i.
func pattern(i int) byte { return byte(i*7 + i>>8) }

// loop runs BlockingReceive until handle reports done (for a receive
// event; every event goes to Unknown afterwards) or timeout passes.
func loop(p *gm.Port, timeout time.Duration, handle func(e *gm.Event) (done bool, err error)) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		e := p.BlockingReceive()
		var done bool
		var err error
		if e.Type.IsRecv() {
			done, err = handle(e)
		}
		p.Unknown(e) // gives receive buffers back, runs callbacks
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("nothing happened for %v", timeout)
}

func server(unit string, port int, cfg *gm.Config, timeout time.Duration) error {
	p, err := gm.Open(unit, port, "put_get server", cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	mem := make([]byte, bufLen)
	ptr, err := p.RegisterMemory(mem)
	if err != nil {
		return err
	}
	if err := p.AllowRemoteMemoryAccess(); err != nil {
		return err
	}
	for i := 0; i < 4; i++ {
		if err := p.ProvideReceiveBuffer(make([]byte, 16), msgSize, gm.LowPriority, 0); err != nil {
			return err
		}
	}
	fmt.Printf("put_get: server node %d (%s) port %d: 1 MiB registered at %#x, remote access allowed\n", p.NodeID(), p.HostName(), port, uint64(ptr))
	replies := 0 // replies not yet completed
	reply := func(to gm.NodeID, toPort int, msg []byte) error {
		replies++
		return p.SendWithCallback(msg, msgSize, len(msg), gm.LowPriority, to, toPort,
			func(*gm.Port, any, gm.Status) { replies-- }, nil)
	}
	var ptrMsg [8]byte
	binary.BigEndian.PutUint64(ptrMsg[:], uint64(ptr))
	var answer []byte
	err = loop(p, timeout, func(e *gm.Event) (bool, error) {
		switch {
		case string(e.Message) == "hello":
			return false, reply(e.SenderNode, e.SenderPort, ptrMsg[:])
		case len(e.Message) == 8 && string(e.Message[:4]) == "done":
			n := int(binary.BigEndian.Uint32(e.Message[4:]))
			answer = []byte("ok")
			for i := 0; i < n && i < bufLen; i++ {
				if mem[i] != pattern(i) {
					answer = []byte(fmt.Sprintf("bad byte %d", i))
					break
				}
			}
			fmt.Printf("put_get: server: the client put %d bytes without an event; checked: %s\n", n, answer)
			return true, reply(e.SenderNode, e.SenderPort, answer)
		}
		return false, fmt.Errorf("unexpected message %q", e.Message)
	})
	if err != nil {
		return err
	}
	// Closing the port drops sends in flight: wait for the answer's
	// completion first.
	deadline := time.Now().Add(timeout)
	for replies > 0 && time.Now().Before(deadline) {
		p.Unknown(p.BlockingReceive())
	}
	if string(answer) != "ok" {
		return fmt.Errorf("%s", answer)
	}
	return nil
}

func client(unit string, port int, cfg *gm.Config, to string, toPort, n int, timeout time.Duration) error {
	if n < 0 || n > bufLen {
		return fmt.Errorf("--bytes %d: want 0..%d", n, bufLen)
	}
	p, err := gm.Open(unit, port, "put_get client", cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	server, err := p.HostNameToNodeID(to)
	if err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		if err := p.ProvideReceiveBuffer(make([]byte, 16), msgSize, gm.LowPriority, 0); err != nil {
			return err
		}
	}
	send := func(msg []byte) error {
		return p.SendWithCallback(msg, msgSize, len(msg), gm.LowPriority, server, toPort, nil, nil)
	}
	// 1. Ask for the server's pointer.
	if err := send([]byte("hello")); err != nil {
		return err
	}
	var remote gm.RemotePtr
	if err := loop(p, timeout, func(e *gm.Event) (bool, error) {
		if len(e.Message) != 8 {
			return false, fmt.Errorf("unexpected message %q", e.Message)
		}
		remote = gm.RemotePtr(binary.BigEndian.Uint64(e.Message))
		return true, nil
	}); err != nil {
		return err
	}
	fmt.Printf("put_get: client: the server's buffer is at %#x\n", uint64(remote))

	// 2. Put, 3. get: each completes through its callback, inside Unknown.
	out := make([]byte, n)
	for i := range out {
		out[i] = pattern(i)
	}
	in := make([]byte, n)
	var status [2]gm.Status
	pending := 2
	cb := func(i int) gm.SendCallback {
		return func(_ *gm.Port, _ any, st gm.Status) { status[i] = st; pending-- }
	}
	start := time.Now()
	if err := p.Put(out, remote, n, gm.LowPriority, server, toPort, cb(0), nil); err != nil {
		return err
	}
	// The get travels in the same stream, after the put: it reads the put's data.
	if err := p.Get(remote, in, n, gm.LowPriority, server, toPort, cb(1), nil); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for pending > 0 && time.Now().Before(deadline) {
		p.Unknown(p.BlockingReceive())
	}
	if pending > 0 {
		return fmt.Errorf("put and get did not complete within %v", timeout)
	}
	took := time.Since(start)
	if status[0] != gm.Success || status[1] != gm.Success {
		return fmt.Errorf("put: %v, get: %v", status[0], status[1])
	}
	if !bytes.Equal(in, out) {
		return fmt.Errorf("the get read back different bytes than the put wrote")
	}
	fmt.Printf("put_get: client: put %d bytes and got them back, identical, in %v\n", n, took.Round(time.Microsecond))

	// 4. Tell the server; it checks its memory and answers.
	var done [8]byte
	copy(done[:], "done")
	binary.BigEndian.PutUint32(done[4:], uint32(n))
	if err := send(done[:]); err != nil {
		return err
	}
	return loop(p, timeout, func(e *gm.Event) (bool, error) {
		fmt.Printf("put_get: client: server says %q\n", e.Message)
		if string(e.Message) != "ok" {
			return true, fmt.Errorf("server: %s", e.Message)
		}
		return true, nil
	})
}
