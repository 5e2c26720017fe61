//go:build !amd64

package auth

import "testing"

// forEachGHASHPath runs f as a subtest on the Go loop, the only GHASH path
// of this architecture.
func forEachGHASHPath(t *testing.T, f func(t *testing.T)) { t.Run("generic", f) }
