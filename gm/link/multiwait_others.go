//go:build !linux

package link

import "time"

// MultiWait sleeps on several Links at once. It is only implemented on
// Linux.
type MultiWait struct{}

// NewMultiWait returns a MultiWait whose Wait fails.
func NewMultiWait(links ...*Link) *MultiWait { return &MultiWait{} }

// Wait returns ErrNotSupported.
func (m *MultiWait) Wait(frames [][]byte, timeout time.Duration) (int, int, error) {
	return 0, -1, ErrNotSupported
}

// Running returns false.
func (l *Link) Running() bool { return false }
