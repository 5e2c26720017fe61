//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "egm-floor: not supported on %s (needs Linux AF_PACKET rings)\n", runtime.GOOS)
	os.Exit(2)
}
