package wireshark

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallScript runs wire/wireshark/install.sh (what make
// wireshark-install calls) with a temporary HOME: the dissector lands in
// ~/.local/lib/wireshark/plugins, tshark loads it from there without -X,
// and --remove takes it out again.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	tshark := needTshark(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "wire", "wireshark", "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	env := tsharkEnv(t)
	home := strings.TrimPrefix(env[0], "HOME=")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	out := run()
	installed := filepath.Join(home, ".local", "lib", "wireshark", "plugins", "ethergm.lua")
	want, err := os.ReadFile(dissectorPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(installed); err != nil || string(got) != string(want) {
		t.Fatalf("after install.sh (%q): %s missing or different (%v)", out, installed, err)
	}

	// tshark finds the installed plugin on its own.
	cmd := exec.Command(tshark, "-r", examplePath, "-Y", "ethergm", "-T", "fields", "-e", "ethergm.type")
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark with the installed dissector: %v", err)
	}
	if n := strings.Count(string(b), "\n"); n == 0 {
		t.Error("tshark with the installed dissector decodes no EtherGM frame in the example capture")
	}

	// Installed and given with -X as well: the second copy steps aside
	// without a Lua error (runTshark fails on any).
	cmd = exec.Command(tshark, "-X", "lua_script:"+dissectorPath(t), "-r", examplePath, "-c", "1")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "Lua") {
		t.Errorf("tshark with the dissector installed and loaded with -X: %v\n%s", err, out)
	}

	run("--remove")
	if _, err := os.Stat(installed); !os.IsNotExist(err) {
		t.Errorf("after install.sh --remove: %s still there (%v)", installed, err)
	}
}
