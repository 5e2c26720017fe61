// Package driver runs the sans-I/O mapper core (package mapper) over real
// interfaces: it is the I/O half of the gm_mapper daemon (cmd/gm_mapper).
//
// # What a Driver does
//
// One Driver serves one unit (all its rails) in one network namespace:
//
//   - it holds the unit's mapper name (ctl.MapperName), so a second
//     gm_mapper of the unit in the same namespace fails at once (ErrBusy,
//     naming the holder's pid), and serves the status document on it
//     (Status: the core's status plus pid, unit, interfaces, open ports,
//     start time);
//   - it opens one link per rail (a link.Endpoint, through
//     Config.OpenLink: package gm/link's AF_PACKET links by default,
//     in-memory links of gm/link/linktest in tests, which need no
//     privileges) that receives only mapper frames (target port 1), and
//     hands every frame to the core's Input with the rail number, the
//     position of the interface in the unit;
//   - it runs the core's timers: a single goroutine reads the links as
//     often as the core asks (RecvDelay; or sleeps on them, RecvPoll < 0),
//     until the core's NextDeadline passes or the next read is due;
//   - at the first wake-up after each PollInterval it looks at each
//     interface (present, its ifindex, IFF_UP and IFF_RUNNING; through
//     Config.Probe, the kernel's by default) and tells the core about
//     rails that went down or came back (SetRailUp); an interface that
//     disappears has its links closed and reopened when it is back;
//   - it writes each map the core installs to the map file atomically
//     (nodemap.WriteFile), where ports read it, and persists the core's
//     state (hosts table with node ids, last map version) to the hosts
//     file, atomically as well, on a goroutine of its own so that it
//     never waits for the disk (diskWriter), except for a hosts file that
//     records a version this host made, written before SaveState returns
//     (the version's CONFIG frames follow); the map file is written soon
//     after it is installed;
//   - it answers for ports that are not open (see below).
//
// # Why it polls
//
// A Driver polls its receive rings (Config.RecvPoll) rather than sleep
// on them: reading a ring is a few memory loads, and sleeping on a timer
// leaves the Go runtime idle; sleeping in link.MultiWait instead blocks a
// thread in ppoll(2), and after every such sleep the runtime's sysmon
// thread polls for up to 10 ms (20 us at first) before it takes the
// blocked thread's P back. With one wake-up per received scout, an idle
// daemon of a large cluster would spend much of its CPU in sysmon. A
// periodic poll costs less, and the longer its period the less: the core
// says how long its frames may wait (mapper.Mapper.RecvDelay: half a
// verification interval, less while it distributes a map), and the Driver
// sleeps that long, so an idle gm_mapper wakes about twice per interval.
// The wake-ups, not the frames, are what many idle daemons on few cores
// pay for.
//
// # Closed ports
//
// GM answers a message for a port that is not open with a PORT_CLOSED
// nack, so the sender's send fails at once with
// GM_SEND_TARGET_PORT_CLOSED. While some port of the unit is open, that
// port answers (gm's lowest open port); a host where only the mapper runs
// has nobody else to do it. So the Driver keeps track of the unit's open
// ports: every open port holds a connection to the Driver's watch
// (ctl.Watch, ctl.DialWatch) whose end, when the port closes or its
// process dies, tells the Driver at once; ports that hold none are found
// in the namespace's socket list (ctl.PortList) every PortProbeInterval.
// The Driver tells the connected ports which ports closed, so that they
// look at the open ports at once too. On each rail it keeps a second link
// whose port mask is exactly the ports that are closed (changed with
// link.CapPortFilter: SetPorts, or reopened, when that set changes), read by a
// goroutine of its own. An OPEN (the start of a session) or a data frame
// (or PUT, GET, GOT) that arrives there for this host's node id is
// answered at once with the NACK PORT_CLOSED of wire.AppendPortClosedNack,
// after checking once more, with ctl.Owner, that the port did not open
// meanwhile. Answers are rate-limited.
//
// A Driver is not safe for concurrent use except for Status and Stop,
// which may be called from any goroutine.
package driver
