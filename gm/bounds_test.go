package gm_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ethergm/ethergm/gm"
)

// maxMapBytesPerHost bounds what a parsed node map keeps per host (issue
// 12, deliverable 7: a map of a million hosts must not cost hundreds of
// MB per process). Measured: 76 bytes.
const maxMapBytesPerHost = 128

// TestBoundsNodeMapMillion measures what a parsed node map of a million
// hosts keeps on the heap (docs/RELIABILITY.md, "Bounds") and fails above
// maxMapBytesPerHost.
func TestBoundsNodeMapMillion(t *testing.T) {
	const n = 1<<20 - 1
	data := func() []byte {
		entries := make([]gm.MapEntry, n)
		for i := range entries {
			id := i + 1
			entries[i] = gm.MapEntry{ID: gm.NodeID(id), Host: fmt.Sprintf("node%07d", id), MACs: [][6]byte{{2, 0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}}}
		}
		m, err := gm.NewNodeMap(entries)
		if err != nil {
			t.Fatal(err)
		}
		return m.Format()
	}()
	before := heapAlloc()
	parsed, err := gm.ParseNodeMap(data)
	if err != nil {
		t.Fatal(err)
	}
	after := heapAlloc()
	perHost := (after - before) / uint64(parsed.Len())
	t.Logf("node map of %d hosts: file %d MB, parsed map keeps %d MB on the heap (%d bytes per host)",
		parsed.Len(), len(data)>>20, (after-before)>>20, perHost)
	if parsed.Len() != n || perHost > maxMapBytesPerHost {
		t.Errorf("a map of %d hosts keeps %d bytes per host, want at most %d", parsed.Len(), perHost, maxMapBytesPerHost)
	}
	if e, ok := parsed.ByHost("node0999999"); !ok || e.ID != 999999 {
		t.Errorf("ByHost in the big map: %+v %v", e, ok)
	}
	runtime.KeepAlive(parsed)
	runtime.KeepAlive(data)
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
