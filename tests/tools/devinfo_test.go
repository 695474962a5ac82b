package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// godapl-devinfo lists providers, devices and IA names as a script reads
// them: text blocks, -l names, -json, and a registry file when one is
// named.
func TestDevinfo(t *testing.T) {
	t.Parallel()
	r := run(t, "", nil, "godapl-devinfo")
	r.want(t, 0, "providers: mem (1 devices), siw (", "hca_id:\tmem0", "\ttransport:\tmemory", "\tmax_qp:",
		"DAT IA names (the default registry", "# ia-name  provider  device", "mem        mem       mem0")

	r = run(t, "", nil, "godapl-devinfo", "-l")
	r.want(t, 0, "mem0\n")
	if strings.Contains(r.stdout, "hca_id") {
		t.Errorf("-l prints more than names:\n%s", r.stdout)
	}

	r = run(t, "", nil, "godapl-devinfo", "-json", "-d", "mem0")
	r.want(t, 0)
	var inv struct {
		Providers []struct {
			Name    string
			Devices []string
		}
		Devices []struct {
			Name, Provider, Transport string
			Addresses                 []string
			Limits                    map[string]uint64
			Counters                  map[string]uint64
		}
		IANames  []struct{ Name, Provider, Device, Address string } `json:"ia_names"`
		Registry string
	}
	if err := json.Unmarshal([]byte(r.stdout), &inv); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(inv.Devices) != 1 || inv.Devices[0].Transport != "memory" || inv.Devices[0].Limits["max_qp"] == 0 ||
		len(inv.Devices[0].Addresses) != 1 || len(inv.IANames) != 1 || inv.IANames[0].Name != "mem" ||
		inv.Registry != "default" || len(inv.Providers) != 1 || inv.Providers[0].Name != "mem" {
		t.Errorf("%+v", inv)
	}

	conf := filepath.Join(t.TempDir(), "dat.conf")
	if err := os.WriteFile(conf, []byte("mine mem mem0 - 127.0.0.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", []string{"GODAPL_DAT_CONF=" + conf}, "godapl-devinfo").want(t, 0, "DAT IA names ("+conf, "mine ", "127.0.0.9")

	run(t, "", nil, "godapl-devinfo", "-d", "nope").want(t, 1, "stderr:", `-d "nope": no such device`)
	run(t, "", nil, "godapl-devinfo", "-l", "-json").want(t, 2, "stderr:", "-l prints names only")
	run(t, "", nil, "godapl-devinfo", "extra").want(t, 2, "stderr:", `unexpected argument "extra"`)
}
