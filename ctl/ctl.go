// Package ctl is how EtherGM's processes on one host find each other and
// answer the tools: every open port, and every gm_mapper, holds an
// abstract Unix socket named after its unit (see PortName, MapperName).
//
// An abstract socket name belongs to the network namespace, not to a
// directory, and the kernel frees it when its process dies; so it makes a
// port exclusive per (network namespace, unit, port) whatever state
// directory or permissions a process uses, and it never outlives its owner.
// A tool that connects learns the owner's pid from the kernel
// (SO_PEERCRED) and reads one JSON document that describes the owner
// (Query). Serving a query runs on a goroutine of the owner: it does not
// touch the owner's fast path beyond what the handler takes.
//
// The ports' names also tell which ports of a unit are open (PortList),
// and every open port holds a connection to its gm_mapper (WatchName,
// DialWatch), so that the mapper learns at once that a port closed or its
// process died.
package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Prefix starts the name of every EtherGM socket.
const Prefix = "ethergm/"

// PortName is the abstract socket name of port id of unit.
func PortName(unit string, port int) string {
	return fmt.Sprintf("%s%s/port%d", Prefix, unit, port)
}

// MapperName is the abstract socket name of the gm_mapper of unit.
func MapperName(unit string) string {
	return fmt.Sprintf("%s%s/mapper", Prefix, unit)
}

// ErrInUse is returned by Listen when another socket (in any process of
// this network namespace) holds the name.
var ErrInUse = errors.New("name in use")

// ErrNotFound is returned by Query and Owner when no process holds the
// name.
var ErrNotFound = errors.New("no such process")

// Server holds a name and answers queries on it.
type Server struct {
	ln      *net.UnixListener
	handler func() any
	wg      sync.WaitGroup
	once    sync.Once
}

// Listen takes name (an abstract socket name without the leading '@') and
// serves handler's value, as JSON, to every connection. It returns an error
// wrapping ErrInUse if the name is held.
func Listen(name string, handler func() any) (*Server, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		if isAddrInUse(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrInUse, name, err)
		}
		return nil, err
	}
	s := &Server{ln: ln, handler: handler}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		var v any
		if s.handler != nil {
			v = s.handler()
		}
		json.NewEncoder(c).Encode(v)
		c.Close()
	}
}

// Close releases the name and waits for the server goroutine to end.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		s.wg.Wait()
	})
	return err
}

// Owner returns the pid of the process that holds name, or an error
// wrapping ErrNotFound.
func Owner(name string) (int, error) {
	c, pid, err := dial(name)
	if err != nil {
		return 0, err
	}
	c.Close()
	return pid, nil
}

// Query connects to name, reads the owner's JSON document into v (if v is
// not nil) and returns the owner's pid.
func Query(name string, v any) (int, error) {
	c, pid, err := dial(name)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if v == nil {
		return pid, nil
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if err := json.NewDecoder(io.LimitReader(c, 16<<20)).Decode(v); err != nil {
		return pid, fmt.Errorf("query %s (pid %d): %w", name, pid, err)
	}
	return pid, nil
}

func dial(name string) (*net.UnixConn, int, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		if isRefused(err) {
			return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return nil, 0, err
	}
	pid, err := peerPID(c)
	if err != nil {
		c.Close()
		return nil, 0, err
	}
	return c, pid, nil
}
