// Package netns builds small multi-host Ethernet networks on one Linux machine
// for EtherGM's integration tests, benchmarks and demos.
//
// # Topology
//
// Every host is a network namespace. Each host has one veth interface per
// rail, named "eth0", "eth1", ... inside the host. The other ends of rail r
// are enslaved to a Linux bridge that acts as switch r; all bridges live in
// one extra "switch" namespace, so nothing is created in the root namespace:
//
//	host0                  switch namespace                  host1
//	eth0 ── veth ── egmIDh0r0 ─┐              ┌─ egmIDh1r0 ── veth ── eth0
//	                           └── egmIDbr0 ──┘
//	eth1 ── veth ── egmIDh0r1 ─┐              ┌─ egmIDh1r1 ── veth ── eth1
//	                           └── egmIDbr1 ──┘
//
// [Options.HostRails] plugs a host's interfaces into other switches: a
// single-rail host among dual-rail ones ({0}), crossed rails ({1, 0}: the
// host's eth0 on switch 1), or a rail on a switch of its own.
//
// With [Options.Direct], two hosts are joined by one veth pair per rail and
// there is no switch. With [Options.Relay] (or [NewImpairedPair]) the
// hosts (two or more, one rail) are joined through a user-space impairment
// relay (package
// [github.com/ethergm/ethergm/internal/netns/relay]) that runs inside this
// process, in its own "relay" namespace:
//
//	host0 eth0 ──veth── [relay ns: egmIDh0r0 ⇄ relay ⇄ egmIDh1r0] ──veth── eth0 host1
//
// With more than two hosts the relay is a learning switch with one port
// per host; relay.From(i) names the frames host i sends (each port has its
// own impairment and counters).
//
// The relay copies frames byte for byte, so checksum offload, segmentation
// offload and GRO are turned off on the two hosts' eth0 (IPv4 traffic then
// crosses the relay intact).
//
// The script internal/netns/cluster.sh builds the same topologies, with the
// same names and addresses, for people ("cluster.sh up 3 --rails 2").
//
// # Use
//
//	func TestIntegrationPingPong(t *testing.T) {
//		c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
//		h0, h1 := c.Hosts[0], c.Hosts[1]
//		// A daemon inside host1 (the name is looked up in PATH; use an
//		// absolute path for binaries built by the test).
//		p, err := h1.Start(bin, "-i", h1.Ifaces[0])
//		...
//		defer p.Stop()
//		// Sockets opened inside Do belong to host0's namespace.
//		var l *link.Link
//		err = h0.Do(func() (err error) { l, err = link.Open("eth0", nil); return err })
//		...
//		h1.LinkDown(1) // rail 1 fails; h1.LinkUp(1) repairs it
//	}
//
// Lossy links for the reliability layer:
//
//	c := netns.NewImpairedPair(t, relay.Config{Seed: 1, EtherType: 0x88B5,
//		AtoB: relay.Impairment{Drop: 0.05, Reorder: 0.01}})
//	...
//	c.Relay().SetImpairment(relay.AtoB, relay.Impairment{})
//	t.Log(c.Relay().Stats(relay.AtoB))
//
// # Naming
//
// Every cluster has a run id: six hex digits made of the creating process id,
// a per-process counter and random bits. The run id appears in every
// namespace ("egm<id>-host0", "egm<id>-sw", "egm<id>-relay"), bridge
// ("egm<id>br0") and switch-side veth name ("egm<id>h0r0"), so clusters of
// concurrent test processes never collide, and leftovers of killed runs are
// easy to find (prefix "egm", see [RemoveStale]).
//
// Interface MAC addresses are locally administered and derived from the run
// id: 02:ID:ID:ID:host:rail for host interfaces and 02:ID:ID:ID:host:0x80|rail
// for their switch-side peers. Interface ethR of host H has the IPv4 address
// 198.18.R.(H+1)/24 (RFC 2544 benchmark range) for UDP and TCP baselines
// (hosts 254 and 255 of a cluster of up to MaxHosts = 256: 198.19.R.(H-253)/24).
// IPv6 is disabled in every namespace so captures contain little besides the
// test's own frames.
//
// # Cleanup
//
// Everything is removed by [Cluster.Close] (registered with testing.TB.Cleanup
// by [New]), by a SIGINT/SIGTERM handler that cleans up and re-raises the
// signal, and, for runs that were killed outright, by [RemoveStale] (also run
// once per process when the first cluster is built, and available as the
// command internal/netns/cmd/egm-netns-clean). Each run records its owner in
// /run/ethergm/netns/<id> so that RemoveStale leaves live runs alone.
//
// # Privileges
//
// Building a cluster needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the
// iproute2 "ip" command. [New] skips the test when either is missing, unless
// the environment variable ETHERGM_REQUIRE_NETNS=1 is set, in which case it
// fails with a one-line reason.
package netns
