// Package examples holds small EtherGM programs that mirror GM's
// gm_simple_example_send and gm_simple_example_recv; see simple_send and
// simple_recv. The package itself only carries their netns test.
//
// Run them on two hosts that share a node map (docs/GM-API.md):
//
//	host1$ simple_recv -port 4
//	host0$ simple_send -to host1 -port 4 "hello"
package examples
