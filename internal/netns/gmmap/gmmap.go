// Package gmmap writes the GM node map of a netns cluster: what a mapper
// would write for it. Host i of the cluster is node i+1, with its MACs in
// rail order (eth0, eth1, ...), so multi-rail units pair rail n with each
// peer's n-th MAC (see gm's multi-rail notes).
//
// It is a package of its own, not part of internal/netns, so that the
// harness does not depend on package gm.
package gmmap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/nodemap"
)

// Entries returns the node map entries of c's hosts.
func Entries(c *netns.Cluster) []gm.MapEntry {
	entries := make([]gm.MapEntry, 0, len(c.Hosts))
	for i, h := range c.Hosts {
		e := gm.MapEntry{ID: gm.NodeID(i + 1), Host: h.Name}
		for _, m := range h.MACs {
			e.MACs = append(e.MACs, [6]byte(m))
		}
		entries = append(entries, e)
	}
	return entries
}

// Write writes the node map of c to path and returns path.
func Write(c *netns.Cluster, path string) (string, error) {
	m, err := gm.NewNodeMap(Entries(c))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, m.Format(), 0o644)
}

// WriteInto writes the node map of c as the file "map" in c's directory
// and returns its path.
func WriteInto(c *netns.Cluster) (string, error) {
	return Write(c, filepath.Join(c.Dir, "map"))
}

// MustWrite is WriteInto for tests and benchmarks: it fails tb if the map
// cannot be written.
func MustWrite(tb testing.TB, c *netns.Cluster) string {
	tb.Helper()
	path, err := WriteInto(c)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// ReadHost reads the node map in h's directory: the file "map" that the
// tests have the host's gm_mapper write.
func ReadHost(h *netns.Host) (*nodemap.Map, error) {
	data, err := os.ReadFile(filepath.Join(h.Dir, "map"))
	if err != nil {
		return nil, err
	}
	return nodemap.Parse(data)
}
