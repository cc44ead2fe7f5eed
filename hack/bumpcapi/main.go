// Command bumpcapi moves every pin of Cluster API in this repository to one
// release, after asking the Go module proxy whether it serves it:
//
//	go run ./hack/bumpcapi -version v1.14.3 [-parity]   # make bump-capi VERSION=v1.14.3
//
// The pins: hack/capi's go.mod (the managers the suites run), the root
// go.mod's sigs.k8s.io/cluster-api/api when it requires it,
// localcluster.ProvidersVersion, the kind images' providers tag, and the
// lines of the docs and comments that name the release in use. Dated history
// (docs/benchmarks.md, docs/compatibility.md's tables) keeps the release it
// was measured with; what still names the old one is listed at the end. With
// -parity it then builds the managers and runs make parity-live, which proves
// the agent still matches upstream's controller of that release.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// providersFile holds localcluster.ProvidersVersion, the release in use.
const providersFile = "internal/harness/localcluster/providers.go"

var providersConst = regexp.MustCompile(`(const ProvidersVersion = ")(v[0-9][^"]*)(")`)

// pin is a file that must name the release in use, and how.
type pin struct {
	file string
	re   *regexp.Regexp // groups: before, version, after
}

// pins are rewritten by pattern and must each be found: a pin gone missing
// means this program no longer moves it.
var pins = []pin{
	{providersFile, providersConst},
	{"hack/kind/images.sh", regexp.MustCompile(`(capi_version=\$\{CAPI_VERSION:-)(v[0-9][^}]*)(\})`)},
}

// versionLines are files whose every mention of the release in use names it
// as the one in use (not a dated measurement), so each is rewritten.
var versionLines = []string{
	"README.md", "Makefile", "docs/development.md", "docs/kind.md", "docs/clusterctl.md",
	"hack/demo.sh", "hack/parity.sh", "hack/benchscale/main.go", "hack/paritylive/main.go",
	"hack/kind/providers/main.go", "internal/harness/parity/parity.go", "internal/harness/scale/scale.go",
	"internal/plugin/plan_test.go", "test/upstream/parity_test.go", "test/e2e/upstream_test.go",
	"testdata/upstream-v1beta2/quick-start-cluster.yaml",
}

var release = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func main() {
	version := flag.String("version", "", "the Cluster API release to move to, e.g. v1.14.3")
	parity := flag.Bool("parity", false, "then build the managers and run make parity-live")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	r, err := bump(*root, *version, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bump-capi:", err)
		os.Exit(1)
	}
	if *parity && r.changed {
		cmd := exec.Command("make", "capi-bins", "parity-live")
		cmd.Dir, cmd.Stdout, cmd.Stderr = *root, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "bump-capi: the pins moved to %s, but make parity-live failed: %v\n", *version, err)
			os.Exit(1)
		}
	}
}

// report is what a bump did.
type report struct {
	from, to string
	changed  bool
	// written are the files rewritten; left name the files that still
	// mention the old release (dated history), for a human to judge.
	written, left []string
}

// bump moves every pin under root from the release in use to version,
// writing what it does to out. It asks the proxy first and changes nothing
// when the proxy does not serve version.
func bump(root, version string, out io.Writer) (*report, error) {
	if !release.MatchString(version) {
		return nil, fmt.Errorf("-version %q is not a release: give one as v1.14.3", version)
	}
	src, err := os.ReadFile(filepath.Join(root, providersFile))
	if err != nil {
		return nil, err
	}
	m := providersConst.FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("%s: no ProvidersVersion constant: the release in use is not known", providersFile)
	}
	r := &report{from: string(m[2]), to: version}
	for _, p := range pins {
		data, err := os.ReadFile(filepath.Join(root, p.file))
		if err != nil {
			return nil, err
		}
		if got := p.re.FindSubmatch(data); got == nil || string(got[2]) != r.from {
			return nil, fmt.Errorf("%s does not pin %s where this program looks (%s): move it by hand, then mend pins", p.file, r.from, p.re)
		}
	}

	modules := []string{"sigs.k8s.io/cluster-api@" + version, "sigs.k8s.io/cluster-api/test@" + version}
	if err := served(filepath.Join(root, "hack/capi"), modules); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "The Go module proxy serves Cluster API %s.\n", version)
	if version == r.from {
		fmt.Fprintf(out, "Every pin is at %s already: nothing to change.\n", version)
		return r, nil
	}
	if err := gocmd(filepath.Join(root, "hack/capi"), append([]string{"get"}, modules...)...); err != nil {
		return nil, err
	}
	if err := gocmd(filepath.Join(root, "hack/capi"), "mod", "tidy"); err != nil {
		return nil, err
	}
	r.written = append(r.written, "hack/capi/go.mod", "hack/capi/go.sum")
	if at := apiRequired(filepath.Join(root, "go.mod")); at != "" && at != version {
		if err := gocmd(root, "get", "sigs.k8s.io/cluster-api/api@"+version); err != nil {
			return nil, err
		}
		if err := gocmd(root, "mod", "tidy"); err != nil {
			return nil, err
		}
		r.written = append(r.written, "go.mod", "go.sum")
	}
	for _, p := range pins {
		if err := rewrite(root, p.file, func(b []byte) []byte { return p.re.ReplaceAll(b, []byte("${1}"+version+"${3}")) }); err != nil {
			return nil, err
		}
		r.written = append(r.written, p.file)
	}
	old := []byte(r.from)
	for _, f := range versionLines {
		data, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(data, old) {
			continue
		}
		if err := rewrite(root, f, func(b []byte) []byte { return bytes.ReplaceAll(b, old, []byte(version)) }); err != nil {
			return nil, err
		}
		r.written = append(r.written, f)
	}
	r.changed = true
	if r.left, err = mentions(root, r.from); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "Moved Cluster API from %s to %s in:\n  %s\n", r.from, version, strings.Join(r.written, "\n  "))
	if len(r.left) > 0 {
		fmt.Fprintf(out, "Still naming %s (dated history, or to judge by hand):\n  %s\n", r.from, strings.Join(r.left, "\n  "))
	}
	return r, nil
}

// served asks the module proxy for each module@version, from dir's module,
// and says what it answered for the first it does not serve.
func served(dir string, modules []string) error {
	cmd := exec.Command("go", append([]string{"mod", "download", "-json"}, modules...)...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	runErr := cmd.Run()
	dec := json.NewDecoder(&stdout)
	for {
		var m struct{ Path, Version, Error string }
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("reading go mod download's answer: %w", err)
		}
		if m.Error != "" {
			return fmt.Errorf("the Go module proxy does not serve %s@%s; it answered: %s", m.Path, m.Version, m.Error)
		}
	}
	if runErr != nil {
		return fmt.Errorf("go mod download %s: %w", strings.Join(modules, " "), runErr)
	}
	return nil
}

func gocmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// apiRequired is the version of Cluster API's api module the go.mod at
// path requires, or "" when it requires none.
func apiRequired(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?sigs\.k8s\.io/cluster-api/api\s+(v\S+)`).FindSubmatch(data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

func rewrite(root, file string, edit func([]byte) []byte) error {
	path := filepath.Join(root, file)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, edit(data), st.Mode())
}

// mentions lists the tracked files under root that still name version.
func mentions(root, version string) ([]string, error) {
	cmd := exec.Command("git", "grep", "-l", "-F", version)
	cmd.Dir = root
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil, nil // none
	}
	if err != nil {
		return nil, fmt.Errorf("git grep %s: %w", version, err)
	}
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		files = append(files, sc.Text())
	}
	return files, nil
}
