package netns

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ipTimeout bounds every invocation of the ip command.
const ipTimeout = 20 * time.Second

// ipCmd runs "ip args..." and returns its standard output. The error includes
// the command line and its standard error.
func ipCmd(args ...string) (string, error) {
	return ipInput("", args...)
}

// ipInput is ipCmd with stdin.
func ipInput(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, firstLine(msg))
	}
	return stdout.String(), nil
}

// ipBatch runs the ip commands in lines (without the leading "ip") inside
// namespace ns with one "ip -n ns -batch -" process.
func ipBatch(ns string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	_, err := ipInput(strings.Join(lines, "\n")+"\n", "-n", ns, "-batch", "-")
	return err
}

// firstLine returns the first line of s (for one-line error messages).
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
