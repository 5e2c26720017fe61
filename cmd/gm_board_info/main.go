// Command gm_board_info prints what this host knows of its EtherGM unit and
// network, as GM's gm_board_info did: the unit's interfaces, the mapper,
// the map version, the number of hosts, whether the network is fully
// configured, this node's name and id, the ports with the process holding
// each, and the route table (gmID, MAC address, gmName, route as "MAC via
// interface"; this node and the mapper marked).
//
// Usage:
//
//	gm_board_info [--unit UNIT] [--map-file FILE] [--json]
//
// It reads the node map file, asks the unit's gm_mapper (if one runs) and
// each open port over their abstract sockets; it does not need root and
// does not disturb the ports' processes. Exit status: 0, 1 if the unit
// cannot be found, 2 for a bad command line.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/cli"
	"github.com/ethergm/ethergm/mapper/driver"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/token"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const description = `gm_board_info prints the state of this host's EtherGM unit: its interfaces,
the mapper in charge, the map version, the number of hosts, whether every
host has the current map ("Network is fully configured."), this node's name
and node id, the ports with the process holding each, and the route table:
for each host its node id (gmID), MAC address, name (gmName) and the route
to it as "MAC via interface" for each interface that reaches it.

It reads the node map (--map-file) and asks the unit's gm_mapper and open
ports over their sockets; it needs no privileges.

Exit status: 0; 1 if the unit cannot be found or the map cannot be read;
2 for a bad command line.`

// BoardInfo is gm_board_info's report (--json).
type BoardInfo struct {
	Version     string      `json:"version"`
	Unit        string      `json:"unit"`
	Interfaces  []Interface `json:"interfaces"`
	Mapper      string      `json:"mapper"`
	MapVersion  uint32      `json:"map_version"`
	Hosts       int         `json:"hosts"`
	Configured  bool        `json:"configured"`
	MapperPID   int         `json:"mapper_pid,omitempty"`
	MapperLevel *uint8      `json:"mapper_level,omitempty"`
	Leader      bool        `json:"leader"`
	MapFile     string      `json:"map_file"`
	StaticMap   bool        `json:"static_map"`
	ThisNode    string      `json:"this_node"`
	NodeID      gm.NodeID   `json:"node_id"`
	NumPorts    int         `json:"num_ports"`
	MaxNodes    int         `json:"max_nodes"`
	SendTokens  int         `json:"send_tokens"`
	RecvTokens  int         `json:"receive_tokens"`
	Ports       []Port      `json:"ports"`
	Routes      []Route     `json:"routes"`
	Duplicates  []string    `json:"duplicates,omitempty"`
	Problems    []string    `json:"problems,omitempty"`
}

// Interface is one rail of the unit.
type Interface struct {
	Name string `json:"name"`
	MAC  string `json:"mac"`
	MTU  int    `json:"mtu"`
	Up   bool   `json:"up"`
}

// Port is one row of the port table. RxPorts (JSON only: GM's port
// table has no such column) are the target ports whose frames the open
// port's links take in (gm.PortInfo.RxPorts).
type Port struct {
	Port    int    `json:"port"`
	Busy    bool   `json:"busy"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	Name    string `json:"name,omitempty"`
	RxPorts []int  `json:"rx_ports,omitempty"`
}

// Route is one row of the route table.
type Route struct {
	NodeID   gm.NodeID `json:"gm_id"`
	MAC      string    `json:"mac"`
	Host     string    `json:"host"`
	ThisNode bool      `json:"this_node"`
	Mapper   bool      `json:"mapper"`
	Hops     []Hop     `json:"route"`
}

// Hop is one way to reach a host: its MAC Peer through local interface Via.
type Hop struct {
	Peer string `json:"mac"`
	Via  string `json:"via"`
}

func run(args []string, stdout, stderr io.Writer) int {
	var (
		unitName, host, mapFile, stateDir, jsonOut string
	)
	c := cli.New("gm_board_info", stdout, stderr)
	c.Synopsis("[--unit UNIT] [--map-file FILE] [--json]")
	c.Description(description)
	c.UnitFlag(&unitName, "")
	c.HostnameFlag(&host, "")
	c.MapFileFlag(&mapFile, "")
	c.StateDirFlag(&stateDir, "")
	c.JSONFlag(&jsonOut, "")
	if code, done := c.Parse(args); done {
		return code
	}
	cfg := &gm.Config{Host: host, MapFile: mapFile, StateDir: stateDir}
	u, err := gm.ResolveUnit(unitName, cfg)
	if err != nil {
		return c.Fail(err)
	}
	bi, err := collect(u, cfg)
	if err != nil {
		return c.Fail(err)
	}
	if jsonOut != "" {
		w, closeOut, err := cli.Create(jsonOut, stdout)
		if err != nil {
			return c.Fail(err)
		}
		if err := writeJSON(w, bi); err != nil {
			closeOut()
			return c.Fail(err)
		}
		if err := closeOut(); err != nil {
			return c.Fail(err)
		}
		return cli.ExitOK
	}
	printReport(stdout, bi)
	return cli.ExitOK
}

// collect gathers the report of unit u.
func collect(u *gm.Unit, cfg *gm.Config) (*BoardInfo, error) {
	bi := &BoardInfo{
		Version: cli.ResolvedVersion(), Unit: u.Name, Mapper: nodemap.FormatMAC(nodemap.MAC{}),
		NumPorts: gm.NumPorts, MaxNodes: int(gm.MaxNodeID),
		SendTokens: token.DefaultSendTokens, RecvTokens: token.DefaultReceiveTokens,
	}
	var macs []nodemap.MAC
	ifname := map[nodemap.MAC]string{}
	for _, name := range u.Interfaces {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("%w: no interface %q on this host", gm.NoSuchDevice, name)
		}
		mac := nodemap.MAC{}
		copy(mac[:], ifc.HardwareAddr)
		macs = append(macs, mac)
		ifname[mac] = name
		bi.Interfaces = append(bi.Interfaces, Interface{Name: name, MAC: nodemap.FormatMAC(mac), MTU: ifc.MTU, Up: ifc.Flags&net.FlagUp != 0})
	}

	// The mapper, if one runs for the unit in this network namespace.
	var st driver.Status
	pid, err := ctl.Query(ctl.MapperName(u.Name), &st)
	mapperRuns := err == nil
	switch {
	case mapperRuns:
		bi.MapperPID, bi.Leader, bi.Configured = pid, st.Leader, st.Configured
		lvl := st.Level
		bi.MapperLevel = &lvl
		for _, d := range st.Duplicates {
			bi.Duplicates = append(bi.Duplicates, fmt.Sprintf("%s %q is claimed by %s", d.Kind, d.Value, strings.Join(d.UniqueIDs, ", ")))
		}
	case errors.Is(err, ctl.ErrNotFound):
		bi.Problems = append(bi.Problems, "no gm_mapper runs for unit "+u.Name+" on this host")
	default:
		bi.Problems = append(bi.Problems, "gm_mapper did not answer: "+err.Error())
	}

	// The node map, as the ports read it.
	bi.MapFile = cfg.MapFile
	if bi.MapFile == "" && mapperRuns {
		bi.MapFile = st.MapFile
	}
	if bi.MapFile == "" {
		bi.MapFile = os.Getenv(gm.EnvMap)
	}
	if bi.MapFile == "" {
		dir := cfg.StateDir
		if dir == "" {
			dir = os.Getenv(gm.EnvStateDir)
		}
		if dir == "" {
			dir = gm.DefaultStateDir
		}
		bi.MapFile = filepath.Join(dir, "map")
	}
	w := nodemap.Watcher{Path: bi.MapFile}
	m, err := w.Load()
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
		bi.Problems = append(bi.Problems, "no node map at "+bi.MapFile+" yet")
	default:
		return nil, fmt.Errorf("%w: %w", gm.InvalidParameter, err)
	}
	if m != nil {
		bi.MapVersion, bi.Hosts = m.Version, m.Len()
		bi.StaticMap = m.Version == 0 && m.Mapper == (nodemap.MAC{})
		if m.Mapper != (nodemap.MAC{}) {
			bi.Mapper = nodemap.FormatMAC(m.Mapper)
		}
		if mapperRuns && st.MapVersion != m.Version {
			// The daemon's view is newer than the file, or the file is not
			// the daemon's: report the file (what ports use) and say so.
			bi.Problems = append(bi.Problems, fmt.Sprintf("gm_mapper holds map version %d, the map file has %d", st.MapVersion, m.Version))
			bi.Configured = false
		}
	} else {
		bi.Configured = false
	}

	host := cfg.Host
	if host == "" {
		host = os.Getenv(gm.EnvHost)
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	self, inMap := m.Self(host, macs...)
	if inMap {
		bi.ThisNode, bi.NodeID = self.Host, self.ID
	} else {
		bi.ThisNode = host
	}

	// Ports: who holds each.
	ports, perr := gm.ListPorts(u.Name)
	if perr != nil {
		bi.Problems = append(bi.Problems, perr.Error())
	}
	byPort := map[int]gm.PortInfo{}
	for _, p := range ports {
		byPort[p.Port] = p
	}
	for id := range gm.NumPorts {
		row := Port{Port: id}
		if p, ok := byPort[id]; ok {
			row = Port{Port: id, Busy: true, PID: p.PID, Program: p.Program, Name: p.Name, RxPorts: p.RxPorts}
			if p.SendTokens > 0 {
				bi.SendTokens, bi.RecvTokens = p.SendTokens, p.ReceiveTokens
			}
		} else if id == gm.MapperPortID && mapperRuns {
			row = Port{Port: id, Busy: true, PID: pid, Program: "gm_mapper"}
		}
		bi.Ports = append(bi.Ports, row)
	}

	// Routes.
	for _, e := range m.Entries() {
		r := Route{NodeID: e.ID, MAC: nodemap.FormatMAC(e.MACs[0]), Host: e.Host, ThisNode: inMap && e.ID == self.ID}
		for _, mac := range e.MACs {
			if mac == m.Mapper {
				r.Mapper = true
			}
		}
		if !r.ThisNode {
			for _, local := range macs {
				if peer, ok := m.PeerMAC(self.ID, e.ID, local); ok {
					r.Hops = append(r.Hops, Hop{Peer: nodemap.FormatMAC(peer), Via: ifname[local]})
				}
			}
		}
		bi.Routes = append(bi.Routes, r)
	}
	return bi, nil
}

func printReport(w io.Writer, bi *BoardInfo) {
	fmt.Fprintf(w, "EtherGM build ID is %q.\n", bi.Version)
	fmt.Fprintf(w, "Board number 0 (unit %s):\n", bi.Unit)
	for _, i := range bi.Interfaces {
		state := "down"
		if i.Up {
			state = "up"
		}
		fmt.Fprintf(w, "\t%s MAC=%s MTU=%d %s\n", i.Name, i.MAC, i.MTU, state)
	}
	fmt.Fprintf(w, "Mapper is %s.\n", bi.Mapper)
	fmt.Fprintf(w, "Map version is %d.\n", bi.MapVersion)
	fmt.Fprintf(w, "%d hosts.\n", bi.Hosts)
	if bi.Configured {
		fmt.Fprintln(w, "Network is fully configured.")
	} else {
		fmt.Fprintln(w, "Network is NOT fully configured.")
	}
	if bi.StaticMap {
		fmt.Fprintf(w, "The map is a static node map (%s), written by hand.\n", bi.MapFile)
	}
	if bi.NodeID != gm.NoSuchNodeID {
		fmt.Fprintf(w, "This node is %q (gmID %d).\n", bi.ThisNode, bi.NodeID)
	} else {
		fmt.Fprintf(w, "This node is %q, not in the map yet.\n", bi.ThisNode)
	}
	if bi.MapperPID != 0 {
		role := "follows the mapper"
		if bi.Leader {
			role = "is the mapper"
		}
		fmt.Fprintf(w, "gm_mapper runs (pid %d, level %d) and %s.\n", bi.MapperPID, *bi.MapperLevel, role)
	}
	fmt.Fprintf(w, "Board has room for %d ports, %d nodes/routes\n", bi.NumPorts, bi.MaxNodes)
	fmt.Fprintf(w, "Port token cnt: send=%d, recv=%d\n", bi.SendTokens, bi.RecvTokens)
	fmt.Fprintln(w, "Port: Status PID")
	for _, p := range bi.Ports {
		if !p.Busy {
			fmt.Fprintf(w, "%4d: FREE\n", p.Port)
			continue
		}
		who := p.Program
		if p.Name != "" && p.Name != p.Program {
			who += " " + p.Name
		}
		fmt.Fprintf(w, "%4d: BUSY %d (%s)\n", p.Port, p.PID, who)
	}
	fmt.Fprintln(w, "Route table for this node follows:")
	fmt.Fprintf(w, "%-6s %-17s %-16s %s\n", "gmID", "MAC Address", "gmName", "Route")
	fmt.Fprintf(w, "%-6s %-17s %-16s %s\n", "----", "-----------------", "--------", "-----")
	for _, r := range bi.Routes {
		var route []string
		for _, h := range r.Hops {
			route = append(route, h.Peer+" via "+h.Via)
		}
		s := strings.Join(route, ", ")
		if r.ThisNode {
			s = "(this node)"
		} else if s == "" {
			s = "(no route)"
		}
		if r.Mapper {
			s += " (mapper)"
		}
		fmt.Fprintf(w, "%6d %-17s %-16s %s\n", r.NodeID, r.MAC, r.Host, s)
	}
	for _, d := range bi.Duplicates {
		fmt.Fprintln(w, "WARNING: "+d+"; these hosts are not merged: give each a unique name and MAC")
	}
	for _, p := range bi.Problems {
		fmt.Fprintln(w, "Note: "+p+".")
	}
}
