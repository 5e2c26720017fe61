// Package mapper is the sans-I/O core of gm_mapper, EtherGM's mapper: host
// discovery on every rail, election of the one mapper in charge, stable node
// ids, building and distributing the node map, and verification (remaps when
// hosts or links come and go). The model is GM-2's mapper; docs/MAPPER.md
// describes the protocol, the election, the states, the files and the
// timings, and docs/PROTOCOL.md §7.8 and §13 the frames.
//
// # Driving the core
//
// A Mapper does no I/O, starts no goroutines and never reads a clock. The
// driver (cmd/gm_mapper) owns one Mapper per unit and calls, from a single
// goroutine:
//
//   - Input for every mapper frame received on any rail (a complete Ethernet
//     frame; anything malformed is counted and dropped);
//   - Tick whenever NextDeadline has passed;
//   - SetRailUp when an interface goes down, comes up or disappears.
//
// The Mapper answers through Output: Send (a frame to transmit on a rail),
// InstallMap (a new node map for this host, with this host's routes) and
// SaveState (the hosts table and last map version; a version this host
// made is on disk before it is used on the wire). Time is virtual: a Time
// is any monotonic duration since an origin the driver chooses.
//
// A Mapper is not safe for concurrent use.
//
// # How it works
//
// Every host sends a SCOUT on every up rail once per verification interval
// (scout.go), listing all its rails with their state, so that any host
// hearing it on any rail learns all of the sender's MACs. The mapper in
// charge broadcasts it; a follower sends it to the mapper in charge only,
// so a follower sends and hears one frame per rail per interval and the
// mapper hears N: O(N) frames per interval, not N². A starting host makes
// NumPasses fast passes whose SCOUTs the mapper in charge answers by
// unicast (and every host, while none leads). The mapper in charge derives
// its routes from what it hears; the map carries, for every MAC, the
// mapper's rails that hear it, from which the followers derive theirs
// (routes.go). The mapper in charge is the host with the highest
// (level, unique id) heard within the liveness window (election.go); when
// it goes silent, its followers broadcast for an interval before the best
// of them takes over. It
// keeps the hosts table, never reusing an id (hosts.go), and distributes
// each new map version as CONFIG frames with acks and retries
// (config.go); the table travels with every map, and a mapper that steps
// down hands its table to the new one. docs/MAPPER.md has the details and
// the timings.
//
// # Changes to the API of the brief
//
// Config has one field more, MTU (default 1500), the link MTU that limits
// the size of CONFIG frames. Output.InstallMap is also called with the
// same version when only this host's routes changed.
//
// # Limits
//
// A host that shares no Ethernet segment with the mapper in charge is not
// mapped: discovery is one hop (scouts are never forwarded).
package mapper
