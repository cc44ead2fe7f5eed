// Command runc-nosysres is the OCI runtime of the kind path's private Docker
// daemon: runc, less CAP_SYS_RESOURCE. These hosts' capability bounding set
// lacks CAP_SYS_RESOURCE, and Docker gives a privileged container (kind's
// nodes, the Docker provider's machines) every capability, which runc cannot
// grant, so each such container fails with "unable to apply caps". It takes
// the capability out of the bundle's config.json (create, run) or of the
// process file (exec), then runs runc with the same arguments.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
)

// dropped is the capability the host cannot grant.
const dropped = "CAP_SYS_RESOURCE"

func main() {
	args := os.Args[1:]
	if err := rewrite(args); err != nil {
		fmt.Fprintf(os.Stderr, "runc-nosysres: %v\n", err)
		os.Exit(1)
	}
	runc, err := exec.LookPath(os.Getenv("RUNC_NOSYSRES_RUNC"))
	if err != nil || os.Getenv("RUNC_NOSYSRES_RUNC") == "" {
		runc = "/usr/sbin/runc"
	}
	if err := syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "runc-nosysres: running %s: %v\n", runc, err)
		os.Exit(1)
	}
}

// rewrite finds the JSON the runc command reads its capabilities from and
// drops the capability there.
func rewrite(args []string) error {
	command, flags := subcommand(args)
	switch command {
	case "create", "run":
		bundle := flagValue(flags, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return dropFrom(filepath.Join(bundle, "config.json"), true)
	case "exec":
		if p := flagValue(flags, "--process", "-p"); p != "" {
			return dropFrom(p, false)
		}
	}
	return nil
}

// subcommand is runc's command and the arguments after it; global flags
// before it are skipped (those that take a value with their value).
func subcommand(args []string) (string, []string) {
	valued := []string{"--root", "--log", "--log-format", "--criu", "--rootless"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 0 && a[0] == '-' {
			if slices.Contains(valued, a) {
				i++
			}
			continue
		}
		return a, args[i+1:]
	}
	return "", nil
}

// flagValue is the value of the first of names in args, as "--x v" or "--x=v".
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if len(a) > len(n)+1 && a[:len(n)+1] == n+"=" {
				return a[len(n)+1:]
			}
		}
	}
	return ""
}

// dropFrom removes the capability from every set of a config.json (whose
// capabilities sit under process) or of a process file.
func dropFrom(path string, underProcess bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	process := doc
	if underProcess {
		p, ok := doc["process"].(map[string]any)
		if !ok {
			return nil
		}
		process = p
	}
	caps, ok := process["capabilities"].(map[string]any)
	if !ok {
		return nil
	}
	changed := false
	for set, list := range caps {
		items, ok := list.([]any)
		if !ok {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(items), func(c any) bool { return c == dropped })
		if len(kept) != len(items) {
			caps[set] = kept
			changed = true
		}
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, info.Mode().Perm())
}
