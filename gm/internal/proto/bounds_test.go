package proto

import (
	"testing"
	"unsafe"
)

// TestStateBounds pins the per-peer and per-stream state that
// docs/RELIABILITY.md ("Bounds") documents: a peer costs its struct once
// it is in the node map and has sent or been sent to, and each (port,
// priority) stream used in a direction costs a stream struct. A change
// that grows them should update the document.
func TestStateBounds(t *testing.T) {
	p, rx, tx := unsafe.Sizeof(peer{}), unsafe.Sizeof(rxStream{}), unsafe.Sizeof(txStream{})
	t.Logf("peer %d bytes, receive stream %d bytes, send stream %d bytes", p, rx, tx)
	if p > 1<<10 || rx > 16<<10 || tx > 8<<10 {
		t.Errorf("peer %d (documented at most 1 KiB), receive stream %d (16 KiB), send stream %d (8 KiB)", p, rx, tx)
	}
}
