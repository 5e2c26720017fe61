package gm

import (
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
	lks := make([]link.Endpoint, 0, len(u.Interfaces))
	for _, ifname := range u.Interfaces {
		lk, err := open(ifname, lc)
		if err == nil && (len(lk.HardwareAddr()) != 6 || lk.MTU() < link.MinMTU) {
			// Only an OpenLink other than link.Open (which checks both)
			// gets here.
			lk.Close()
			err = &link.OpError{Op: "open", Interface: ifname, Err: link.ErrNotEthernet}
			if len(lk.HardwareAddr()) == 6 {
				err = &link.OpError{Op: "open", Interface: ifname, Err: link.ErrMTU, Detail: fmt.Sprint(lk.MTU())}
			}
		}
		if err != nil {
			for _, l := range lks {
				l.Close()
			}
			return nil, err
		}
		if wrap != nil {
			lk = wrap(lk)
		}
		lks = append(lks, lk)
	}
	return lks, nil
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
