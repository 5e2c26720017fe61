package link

// SetPorts changes the target ports the Link receives (Config.Ports; 0
// means AllPorts) while it runs, by replacing the receive filter of its
// sockets. Frames of the old set already in the ring are still returned,
// and a frame that arrives while the filter changes may be read with the
// old filter or the new one: a reader must not rely on the set for
// correctness, only on it to keep other ports' frames out of its ring.
// Calls must not overlap each other; Close may come at any time.
func (l *Link) SetPorts(ports PortMask) error {
	if ports == 0 {
		ports = AllPorts
	}
	l.fdMu.RLock() // Close closes the sockets under fdMu
	defer l.fdMu.RUnlock()
	if l.closed.Load() || l.fdR < 0 {
		return l.opErr("set ports", ErrClosed)
	}
	if ports == l.cfg.Ports {
		return nil
	}
	// The doorbell first: while the two filters differ, it may wake the
	// reader for a frame the ring did not take (a wasted wake-up), or miss
	// one for a frame of a port being removed, never one the reader must
	// see (see open for why the doorbell comes first).
	// Config.Ports changes only once both filters are in place, so a
	// failed call is retried in full.
	bell, ring := l.filter(1), l.filter(acceptAll)
	bell.ports, ring.ports = ports, ports
	if l.fdD >= 0 {
		if err := l.attachFilter(l.fdD, bell); err != nil {
			return err
		}
	}
	if err := l.attachFilter(l.fdR, ring); err != nil {
		return err
	}
	l.cfg.Ports = ports
	return nil
}
