package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/ethergm/ethergm/gm"
)

// Fail reports err on one line, with Advice's what-to-do, and returns
// ExitFailure:
//
//	<name>: <GM status>: <what happened>; <what to do>
//
// The GM status is the gm.Status err wraps (errors.As), left out if it
// wraps none; the what-to-do is left out when Advice has none.
func (c *Command) Fail(err error) int {
	return c.FailWith(err, Advice(err))
}

// FailWith is Fail with the what-to-do given by the command, in the words
// of its command line ("pass --remote-host with ..."). An empty advice
// leaves it out.
func (c *Command) FailWith(err error, advice string) int {
	fmt.Fprintln(c.Stderr, c.Name+": "+Message(err, advice))
	return ExitFailure
}

// Message formats err and advice as Fail does, without the command name:
// "<GM status>: <what happened>; <what to do>".
func Message(err error, advice string) string {
	msg := err.Error()
	var st gm.Status
	if errors.As(err, &st) {
		// The status's own text ("gm: GM_X: description") is replaced by
		// its name at the front of the line.
		rest := strings.Replace(msg, st.Error(), "", 1)
		rest = strings.Replace(rest, ": : ", ": ", 1)
		rest = strings.Trim(rest, ": ")
		if rest == "" {
			rest = gm.Strerror(st)
		}
		msg = st.String() + ": " + rest
	}
	msg = strings.ReplaceAll(msg, "\n", "; ")
	if advice != "" {
		msg += "; " + advice
	}
	return msg
}

// Advice returns what to do about err in command-line words, "" if there
// is nothing general to say. It knows the statuses of opening a port
// (gm.Open) and of naming a peer.
func Advice(err error) string {
	if errors.Is(err, os.ErrPermission) {
		return "run as root, or give the program CAP_NET_RAW: sudo setcap cap_net_raw,cap_net_admin+ep PROGRAM"
	}
	var st gm.Status
	if !errors.As(err, &st) {
		return ""
	}
	if errors.Is(err, os.ErrNotExist) {
		// A file the port needs, the node map above all, is missing.
		return "that file does not exist; pass --map-file with the node map, or --state-dir with the directory that holds it"
	}
	switch st {
	case gm.NoSuchDevice:
		up := upInterfaces()
		if len(up) == 0 {
			return "no network interface is up; bring one up (ip link set IFACE up) and pass --unit IFACE"
		}
		return "pass --unit with one of: " + strings.Join(up, ", ")
	case gm.PermissionDenied:
		return fmt.Sprintf("ports %d, %d and %d are reserved for GM's daemons; use --port 2 or 4..%d",
			gm.DaemonPortID, gm.MapperPortID, gm.EthernetPortID, gm.NumPorts-1)
	case gm.InvalidPortNumber:
		return fmt.Sprintf("use --port 2 or 4..%d", gm.NumPorts-1)
	case gm.Busy:
		return "another process has this port of the unit open; pass another --port, or stop that process"
	case gm.NodeIDNotYetSet:
		return "this host is not in the node map; pass --hostname with a host of the map, or --map-file with a map that lists this host"
	case gm.NoMatch:
		return "pass --remote-host with a host name or a node id of the node map (--map-file)"
	case gm.SendTimedOut, gm.SendTargetPortClosed, gm.SendTargetNodeUnreachable, gm.TimedOut:
		return "check that the peer program runs on --remote-host with the port it is sent to, and that the link is up"
	}
	return ""
}

// upInterfaces lists the interfaces that are up and have an Ethernet
// address, loopback excluded.
func upInterfaces() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 && len(i.HardwareAddr) == 6 {
			names = append(names, i.Name)
		}
	}
	return names
}
