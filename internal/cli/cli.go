package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/gm"
)

// Exit statuses of every EtherGM command.
const (
	ExitOK      = 0 // success; --help; --version
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // bad command line: unknown option, bad value, bad argument
)

// Command is one command's command line: its flags, its help text and its
// output streams. Create it with New, register flags, then call Parse.
// A Command is not safe for concurrent use.
type Command struct {
	// Name is the command's name, the first word of every message.
	Name string
	// Flags holds the command's options; register tool-specific ones on it
	// with the usual pflag methods.
	Flags *pflag.FlagSet
	// Stdout receives help, version and the command's results; Stderr
	// receives messages.
	Stdout, Stderr io.Writer

	synopsis    []string
	description string
	maxArgs     int
	argsName    string
	help        bool
	version     bool
}

// New returns the command line of the command name, with --help (-h) and
// --version registered.
func New(name string, stdout, stderr io.Writer) *Command {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse reports errors itself
	fs.Usage = func() {}
	fs.SortFlags = false
	c := &Command{Name: name, Flags: fs, Stdout: stdout, Stderr: stderr}
	fs.BoolVarP(&c.help, "help", "h", false, "print this help and exit")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	return c
}

// Synopsis sets the usage lines that --help prints after the command name,
// such as "--unit IFACE --listen [OPTION]...". The default is
// "[OPTION]...".
func (c *Command) Synopsis(lines ...string) { c.synopsis = lines }

// Description sets the text --help prints between the synopsis and the
// options: what the command does, its output and its exit statuses.
func (c *Command) Description(text string) { c.description = strings.TrimSpace(text) }

// Args allows up to n positional arguments, called name in messages
// ("FILE"; by default a command takes none). Read them with c.Flags.Args
// after Parse.
func (c *Command) Args(n int, name string) { c.maxArgs, c.argsName = n, name }

// Parse parses args (without the command name). If done is true the
// command must return code at once: after --help or --version (code
// ExitOK, the text printed to Stdout) or a usage error (code ExitUsage,
// reported on Stderr).
func (c *Command) Parse(args []string) (code int, done bool) {
	err := c.Flags.Parse(args)
	switch {
	case err != nil && c.help: // -h before the bad option: help wins
		c.PrintHelp()
		return ExitOK, true
	case err != nil:
		return c.Usagef("%s", describeParseError(err)), true
	case c.help:
		c.PrintHelp()
		return ExitOK, true
	case c.version:
		fmt.Fprintf(c.Stdout, "%s (EtherGM) %s\n", c.Name, ResolvedVersion())
		return ExitOK, true
	}
	if n := c.Flags.NArg(); n > c.maxArgs {
		extra := c.Flags.Arg(c.maxArgs)
		msg := fmt.Sprintf("unexpected argument %q", extra)
		if c.maxArgs > 0 {
			msg = fmt.Sprintf("too many arguments: at most %d %s", c.maxArgs, c.argsName)
		}
		if hint := c.optionalValueHint(args, extra); hint != "" {
			msg += "; " + hint
		}
		return c.Usagef("%s", msg), true
	}
	return ExitOK, false
}

// optionalValueHint explains an unexpected argument that follows an option
// whose value is optional (--json FILE instead of --json=FILE).
func (c *Command) optionalValueHint(args []string, extra string) string {
	for i := 1; i < len(args); i++ {
		if args[i] != extra || !strings.HasPrefix(args[i-1], "--") {
			continue
		}
		f := c.Flags.Lookup(strings.TrimPrefix(args[i-1], "--"))
		if f != nil && f.NoOptDefVal != "" && f.Value.Type() != "bool" {
			return fmt.Sprintf("to give --%s a value, write --%s=%s", f.Name, f.Name, extra)
		}
	}
	return ""
}

// describeParseError words pflag's errors the way the rest of the message
// reads: the option, the value, and what was wrong with it.
func describeParseError(err error) string {
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) {
		cause := inv.Unwrap()
		var num *strconv.NumError
		if errors.As(cause, &num) {
			switch {
			case errors.Is(num.Err, strconv.ErrRange):
				cause = errors.New("out of range")
			default:
				cause = errors.New("not a number")
			}
		}
		return fmt.Sprintf("invalid value %q for --%s: %v", inv.GetValue(), inv.GetFlag().Name, cause)
	}
	var req *pflag.ValueRequiredError
	if errors.As(err, &req) {
		return fmt.Sprintf("option --%s needs a value", req.GetFlag().Name)
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if s := ne.GetSpecifiedShortnames(); s != "" {
			return fmt.Sprintf("unknown option -%s in -%s (long options take two dashes)", ne.GetSpecifiedName(), s)
		}
		return fmt.Sprintf("unknown option --%s", ne.GetSpecifiedName())
	}
	return err.Error()
}

// Usagef reports a usage error: "<name>: <message>" and a pointer to
// --help, on Stderr. It returns ExitUsage.
func (c *Command) Usagef(format string, args ...any) int {
	fmt.Fprintf(c.Stderr, "%s: %s\nTry '%s --help' for more information.\n", c.Name, fmt.Sprintf(format, args...), c.Name)
	return ExitUsage
}

// PrintHelp writes the help text to Stdout.
func (c *Command) PrintHelp() {
	w := c.Stdout
	syn := c.synopsis
	if len(syn) == 0 {
		syn = []string{"[OPTION]..."}
	}
	for i, s := range syn {
		lead := "Usage: "
		if i > 0 {
			lead = "  or:  "
		}
		fmt.Fprintf(w, "%s%s %s\n", lead, c.Name, s)
	}
	if c.description != "" {
		fmt.Fprintf(w, "\n%s\n", c.description)
	}
	fmt.Fprintf(w, "\nOptions:\n%s", c.optionUsages())
}

// optionUsages formats the options GNU-style, one per entry, the text
// wrapped at 80 columns:
//
//	-v, --verbose          say more (repeat for more)
//	    --port PORT        the GM port to open (default 2)
//	    --json[=FILE]      write the results as JSON ...
func (c *Command) optionUsages() string {
	type entry struct{ left, text string }
	var entries, last []entry // last: --help and --version, shown at the end
	width := 0
	c.Flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, text := pflag.UnquoteUsage(f)
		switch f.Value.Type() {
		case "bool", "count":
			name = ""
		case "int", "uint", "int64", "uint64", "int32", "uint32", "uint16", "uint8":
			if !strings.Contains(f.Usage, "`") {
				name = "N"
			}
		}
		if name != "" && name == strings.ToLower(name) {
			name = strings.ToUpper(name)
		}
		switch {
		case name == "":
		case f.NoOptDefVal != "":
			left += "[=" + name + "]"
		default:
			left += " " + name
		}
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "[]" && d != "0s" && f.Value.Type() != "count" {
			if f.Value.Type() == "string" {
				d = strconv.Quote(d)
			}
			text += " (default " + d + ")"
		}
		if f.Name == "help" || f.Name == "version" {
			last = append(last, entry{left, text})
		} else {
			entries = append(entries, entry{left, text})
		}
		if len(left) <= 30 {
			width = max(width, len(left))
		}
	})
	var b strings.Builder
	for _, e := range append(entries, last...) {
		b.WriteString(e.left)
		col := width + 2
		if len(e.left) > width {
			b.WriteString("\n")
			b.WriteString(strings.Repeat(" ", col))
		} else {
			b.WriteString(strings.Repeat(" ", col-len(e.left)))
		}
		line := col
		for i, word := range strings.Fields(e.text) {
			if i > 0 && line+1+len(word) > 80 {
				b.WriteString("\n")
				b.WriteString(strings.Repeat(" ", col))
				line = col
			} else if i > 0 {
				b.WriteString(" ")
				line++
			}
			b.WriteString(word)
			line += len(word)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// flag defaults (help text) shared by the commands.
const (
	unitUsage = "the GM `UNIT`: a unit name or a comma-separated interface list (default: $" + gm.EnvUnit +
		", else the only interface that is up)"
	hostnameUsage = "this host's `NAME` in the node map (default: $" + gm.EnvHost + ", else the kernel's host name)"
	mapFileUsage  = "the node map `FILE` (default: $" + gm.EnvMap + ", else STATE-DIR/map)"
	stateDirUsage = "the per-host state directory `DIR` (default: $" + gm.EnvStateDir + ", else " + gm.DefaultStateDir + ")"
	remoteUsage   = "the peer `HOST`: a host name of the node map, or a node id"
	jsonUsage     = "write the results as JSON to standard output, or to `FILE` with --json=FILE"
	verboseUsage  = "say more (repeat for more)"
)

// UnitFlag registers --unit UNIT into p. An empty usage selects the
// standard text. The value is resolved by gm.ResolveUnit: "" means
// $ETHERGM_UNIT, else the only interface that is up.
func (c *Command) UnitFlag(p *string, usage string) {
	c.Flags.StringVar(p, "unit", "", or(usage, unitUsage))
}

// PortFlag registers --port PORT, this side's GM port id (0..15), into p
// with the default def.
func (c *Command) PortFlag(p *int, def int, usage string) {
	c.PortVar(p, "port", def, or(usage, "the GM `PORT` to open, 0..15 (0, 1 and 3 are reserved for GM's daemons)"))
}

// RemoteHostFlag registers --remote-host HOST into p.
func (c *Command) RemoteHostFlag(p *string, usage string) {
	c.Flags.StringVar(p, "remote-host", "", or(usage, remoteUsage))
}

// GMFlags registers --hostname, --map-file and --state-dir into cfg.Host,
// cfg.MapFile and cfg.StateDir. Left empty, the gm package falls back to
// $ETHERGM_HOST, $ETHERGM_MAP and $ETHERGM_STATE_DIR, then to its defaults.
func (c *Command) GMFlags(cfg *gm.Config) {
	c.HostnameFlag(&cfg.Host, "")
	c.MapFileFlag(&cfg.MapFile, "")
	c.StateDirFlag(&cfg.StateDir, "")
}

// HostnameFlag registers --hostname NAME into p.
func (c *Command) HostnameFlag(p *string, usage string) {
	c.Flags.StringVar(p, "hostname", "", or(usage, hostnameUsage))
}

// MapFileFlag registers --map-file FILE into p.
func (c *Command) MapFileFlag(p *string, usage string) {
	c.Flags.StringVar(p, "map-file", "", or(usage, mapFileUsage))
}

// StateDirFlag registers --state-dir DIR into p.
func (c *Command) StateDirFlag(p *string, usage string) {
	c.Flags.StringVar(p, "state-dir", "", or(usage, stateDirUsage))
}

// JSONFlag registers --json[=FILE] into p: after Parse, p is "" without
// the option, "-" for standard output (--json alone or --json=-), else
// the file name. Open the destination with Create.
func (c *Command) JSONFlag(p *string, usage string) {
	c.Flags.StringVar(p, "json", "", or(usage, jsonUsage))
	c.Flags.Lookup("json").NoOptDefVal = "-"
}

// PcapFlag registers --pcap FILE and returns the setting it fills in; its
// Open returns the capture writer (nil, capture off, if neither --pcap nor
// $ETHERGM_PCAP is set).
func (c *Command) PcapFlag() *capture.Setting {
	s := new(capture.Setting)
	c.Flags.StringVar(&s.Path, "pcap", "",
		"record every EtherGM frame sent or received in pcapng `FILE` (default: $"+capture.EnvVar+"; %p = process id)")
	return s
}

// VerboseFlag registers -v, --verbose into p, which counts the times it
// was given.
func (c *Command) VerboseFlag(p *int, usage string) {
	c.Flags.CountVarP(p, "verbose", "v", or(usage, verboseUsage))
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
