//go:build !linux

package main

import "os"

// isTerminal reports false: the progress display is for Linux terminals.
func isTerminal(*os.File) bool { return false }
