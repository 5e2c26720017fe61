// Package cli gives every EtherGM command one command-line convention, so
// that a user who knows one tool knows the others. It is built on
// github.com/spf13/pflag: GNU-style long options (--port 2, --port=2), short
// options only where listed below, and options may come after arguments.
//
// # The convention
//
// The same thing has the same name in every tool:
//
//	--unit UNIT          the GM unit: a unit name of <state dir>/units or a
//	                     comma-separated interface list (default
//	                     $ETHERGM_UNIT, else the only interface that is up)
//	--port PORT          the GM port id this side uses, 0..15
//	--remote-host HOST   the peer: a host name of the node map (or a node id)
//	--remote-port PORT   the peer's GM port id, 0..15
//	--hostname NAME      this host's name in the node map
//	                     (default $ETHERGM_HOST, else the kernel host name)
//	--map-file FILE      the node map (default $ETHERGM_MAP, else
//	                     <state dir>/map)
//	--state-dir DIR      the per-host state directory (default
//	                     $ETHERGM_STATE_DIR, else /run/ethergm)
//	--json[=FILE]        write the command's data as JSON, to standard
//	                     output or to FILE (the value must be attached with
//	                     "="; "-" is standard output)
//	--pcap FILE          record every EtherGM frame sent or received in
//	                     pcapng (default $ETHERGM_PCAP; %p = process id)
//	-v, --verbose        say more; repeat for more still. Never "verify".
//	-h, --help           print the help and exit 0
//	--version            print "<command> (EtherGM) <version>" and exit 0
//
// A tool registers only the options it uses (New always registers --help
// and --version; UnitFlag, PortFlag, RemoteHostFlag, GMFlags, JSONFlag,
// PcapFlag and VerboseFlag the others), and adds its own with the usual
// pflag calls on Command.Flags. Names are lower case words joined by
// hyphens; a new option that means one of the things above must use its
// name.
//
// # Values
//
// Values are checked while parsing, with a message that names the option
// and the accepted range: a GM port is 0..15 (PortVar), an EtherType is
// 0x0600..0xFFFF (EtherTypeVar, decimal or 0x hexadecimal). A tool checks
// the rest right after Parse and reports a problem with Usagef.
//
// # Exit status and messages
//
//	0  success, and --help and --version
//	1  failure: the command ran and something went wrong (Fail, FailWith)
//	2  usage error: an unknown option, a bad value, a missing or unexpected
//	   argument (Parse, Usagef)
//
// Every message goes to standard error on one line that starts with the
// command's name. A usage error is followed by
// "Try '<command> --help' for more information." A failure names the GM
// status when there is one, says what happened, and says what to do in the
// words of the command line, not of the Go API:
//
//	gm_allsize: GM_NO_SUCH_DEVICE: interface "eth9": no such network interface; pass --unit with one of: eth0, eth1
//
// Advice gives the usual what-to-do for the GM statuses a tool meets when
// it opens a port; a tool that knows better passes its own to FailWith.
//
// # Help
//
// --help prints the synopsis lines ("Usage: gm_frames --unit IFACE
// --listen [OPTION]..."), the description, and the options with their
// defaults, to standard output. Help text speaks of options, values and
// files, never of Go identifiers.
//
// # Version
//
// The version is Version if set at link time:
//
//	go build -ldflags "-X github.com/ethergm/ethergm/internal/cli.Version=v1.2.3" ./cmd/...
//
// else the module version of a `go install ...@version` build, else the
// VCS revision the binary was built from ("+dirty" when the tree had
// changes), else "devel".
//
// # A command's main
//
//	func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
//
//	func run(args []string, stdout, stderr io.Writer) int {
//		c := cli.New("gm_tool", stdout, stderr)
//		c.Synopsis("[OPTION]...")
//		c.Description("gm_tool does one thing well.")
//		var port int
//		var cfg gm.Config
//		c.PortFlag(&port, 2, "")
//		c.GMFlags(&cfg)
//		if code, done := c.Parse(args); done {
//			return code
//		}
//		p, err := gm.Open(..., port, ..., &cfg)
//		if err != nil {
//			return c.Fail(err)
//		}
//		...
//		return cli.ExitOK
//	}
package cli
