package gm_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/ethergm/ethergm/gm"
)

// boundsEnv, set to 1, runs the bounds measurements (issue 12, deliverable
// 7); they allocate hundreds of MB, so make test leaves them out.
const boundsEnv = "ETHERGM_BOUNDS"

// TestBoundsNodeMapMillion measures what a parsed node map of a million
// hosts keeps on the heap (docs/RELIABILITY.md, "Bounds").
func TestBoundsNodeMapMillion(t *testing.T) {
	if os.Getenv(boundsEnv) != "1" {
		t.Skipf("set %s=1 to measure", boundsEnv)
	}
	const n = 1<<20 - 1
	entries := make([]gm.MapEntry, n)
	for i := range entries {
		id := i + 1
		entries[i] = gm.MapEntry{ID: gm.NodeID(id), Host: fmt.Sprintf("node%07d", id), MACs: [][6]byte{{2, 0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}}}
	}
	m, err := gm.NewNodeMap(entries)
	if err != nil {
		t.Fatal(err)
	}
	data := m.Format()
	entries, m = nil, nil
	before := heapInuse()
	parsed, err := gm.ParseNodeMap(data)
	if err != nil {
		t.Fatal(err)
	}
	after := heapInuse()
	t.Logf("node map of %d hosts: file %d MB, parsed map keeps %d MB on the heap (%d bytes per host)",
		parsed.Len(), len(data)>>20, (after-before)>>20, (after-before)/uint64(parsed.Len()))
	runtime.KeepAlive(parsed)
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
