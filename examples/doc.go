// Package examples holds small EtherGM programs: simple_send and
// simple_recv mirror GM's gm_simple_example_send and
// gm_simple_example_recv; put_get shows remote memory access (a buffer
// registered and exposed by a server, written with Put and read back with
// Get by a client). The package itself only carries their netns tests.
//
// `make build` puts them in bin/ next to the commands. They use the
// standard library's flag package, so that they can be copied out of this
// module, with the option names of the EtherGM commands (--unit, --port,
// --remote-host, --remote-port, --hostname, --state-dir, --map-file).
//
// Run them on two hosts that share a node map (docs/GM-API.md):
//
//	host1$ simple_recv --port 4
//	host0$ simple_send --remote-host host1 --remote-port 4 "hello"
//
//	host1$ put_get --serve
//	host0$ put_get --remote-host host1 --bytes 100000
package examples
