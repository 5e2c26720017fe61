package gm

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/ethergm/ethergm/gm/internal/rail"
	"github.com/ethergm/ethergm/gm/link"
)

// A port talks to its unit's interfaces through a rail set (package
// gm/internal/rail), of one rail per interface: a unit of one interface is
// a set of one. The set is the engine's output, the port drains it, sleeps
// on it, and it holds the peers' MAC addresses; with several rails it
// pairs them, stripes large messages over them and fails over between them
// (see the package).

// openLinks opens the links of unit u with open, one per interface, each
// decorated with wrap if it is set.
//
// A unit of several interfaces opens as long as one of them is up: the
// others are opened with link.Config.AllowDown, and their rails start
// down (the set finds their links not Running), as if they had gone down
// after the open; the set takes each back when its interface comes up. A
// unit whose interfaces are all down, or of one down interface, fails
// with the first one's link.ErrInterfaceDown.
func openLinks(u *Unit, lc *link.Config, open func(string, *link.Config) (link.Endpoint, error), wrap func(link.Endpoint) link.Endpoint) ([]link.Endpoint, error) {
	if len(u.Interfaces) > rail.MaxRails {
		return nil, fmt.Errorf("unit %q has %d interfaces (at most %d rails)", u.Name, len(u.Interfaces), rail.MaxRails)
	}
	for i, a := range u.Interfaces {
		for _, b := range u.Interfaces[:i] {
			if a == b {
				return nil, fmt.Errorf("unit %q lists interface %s twice", u.Name, a)
			}
		}
	}
	lks := make([]link.Endpoint, len(u.Interfaces))
	fail := func(err error) ([]link.Endpoint, error) {
		for _, l := range lks {
			if l != nil {
				l.Close()
			}
		}
		return nil, err
	}
	// The interfaces that are up first, so that a unit with none up opens
	// no link; then the down ones.
	var down []int
	var downErr error
	for i, ifname := range u.Interfaces {
		lk, err := openRail(ifname, lc, open)
		if errors.Is(err, link.ErrInterfaceDown) && len(u.Interfaces) > 1 {
			down = append(down, i)
			downErr = cmp.Or(downErr, err)
			continue
		}
		if err != nil {
			return fail(err)
		}
		lks[i] = lk
	}
	if len(down) == len(u.Interfaces) {
		return fail(downErr)
	}
	if len(down) > 0 {
		dc := *lc
		dc.AllowDown = true
		for _, i := range down {
			lk, err := openRail(u.Interfaces[i], &dc, open)
			if err != nil {
				return fail(err)
			}
			lks[i] = lk
		}
	}
	if wrap != nil {
		for i, lk := range lks {
			lks[i] = wrap(lk)
		}
	}
	return lks, nil
}

// openRail opens the link of interface ifname with open and checks what
// link.Open checks itself (a 6-byte MAC, link.MinMTU) for other openers.
func openRail(ifname string, lc *link.Config, open func(string, *link.Config) (link.Endpoint, error)) (link.Endpoint, error) {
	lk, err := open(ifname, lc)
	if err != nil {
		return nil, err
	}
	if len(lk.HardwareAddr()) != 6 {
		lk.Close()
		return nil, &link.OpError{Op: "open", Interface: ifname, Err: link.ErrNotEthernet}
	}
	if lk.MTU() < link.MinMTU {
		lk.Close()
		return nil, &link.OpError{Op: "open", Interface: ifname, Err: link.ErrMTU, Detail: fmt.Sprint(lk.MTU())}
	}
	return lk, nil
}

// adoptMapLocked makes the peers' addresses follow the node map m (just
// stored, with this host's node id): the rail set's table, which the
// engine's copies come from. It is the one place a map change reaches
// them. The port mutex is held.
func (p *Port) adoptMapLocked(m *NodeMap) {
	p.rails.SetMap(m, p.nodeID.Load())
	p.eng.InvalidatePeers()
}

// RailStats describes one rail (interface) of a port's unit.
type RailStats = rail.Stats

// RailStats returns the state and counters of each rail of the port, in
// the order of Unit.Interfaces. A unit with one interface has one rail,
// never down or suspect (its link is used whatever its state).
func (p *Port) RailStats() []RailStats {
	out := p.rails.Stats()
	p.mu.Lock()
	p.rails.State(out)
	p.mu.Unlock()
	return out
}
