// Package relay is a user-space Ethernet switch with two ports that
// impairs the frames it forwards, for testing EtherGM's reliability layer
// on real sockets (the kernel has no tc netem here).
//
// A [Relay] reads every frame arriving on side A and writes it to side B,
// and the other way round. Per direction it drops, duplicates, corrupts,
// reorders and delays frames at configured rates ([Impairment]), with
// pseudo-random choices from a seeded math/rand/v2 generator, and counts
// what it did ([Stats]). The impairment logic is the socket-free
// [Impairer], deterministic for a given seed.
//
// Sides are [Conn] values, normally packet sockets from [Listen] (ETH_P_ALL,
// promiscuous, outgoing frames ignored). The netns harness
// (github.com/ethergm/ethergm/internal/netns, NewImpairedPair) runs a relay in
// its own namespace between two hosts; cmd/egm-relay runs one between two
// named interfaces.
//
// This package must not import EtherGM's gm packages, whose tests import
// the harness.
package relay
