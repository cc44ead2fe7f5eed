package main

import (
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is this repository's root, two directories up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sums are the contents' digests of every pin and version line under root.
func sums(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	files := append([]string{"hack/capi/go.mod", "hack/capi/go.sum", "go.mod"}, versionLines...)
	for _, p := range pins {
		files = append(files, p.file)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = sha256.Sum256(data)
	}
	return out
}

// unchanged fails t for each file whose digest under root is not before's.
func unchanged(t *testing.T, root string, before map[string][32]byte) {
	t.Helper()
	after := sums(t, root)
	for f, s := range before {
		if after[f] != s {
			t.Errorf("%s changed", f)
		}
	}
}

// TestBumpToTheReleaseInUseChangesNothing is make bump-capi against the
// release in use: the proxy is asked, every pin is found where it is looked
// for, and no file changes.
// TestTheAPIModuleIsTheManagersRelease: the api module the product builds
// against is the release of the managers the suites run.
func TestTheAPIModuleIsTheManagersRelease(t *testing.T) {
	root := repoRoot(t)
	inUse := releaseInUse(t, root)
	if at := apiRequired(filepath.Join(root, "go.mod")); at != inUse {
		t.Errorf("go.mod requires sigs.k8s.io/cluster-api/api %q; the managers run %s", at, inUse)
	}
}

func TestBumpToTheReleaseInUseChangesNothing(t *testing.T) {
	root := repoRoot(t)
	inUse := releaseInUse(t, root)
	before := sums(t, root)
	var out strings.Builder
	r, err := bump(root, inUse, &out)
	if err != nil {
		t.Fatalf("bump to %s, the release in use: %v", inUse, err)
	}
	if r.changed || !strings.Contains(out.String(), "Every pin is at "+inUse+" already") {
		t.Errorf("bump to the release in use changed something or did not say so: %s", out.String())
	}
	unchanged(t, root, before)
}

// TestBumpRefusesWhatTheProxyDoesNotServe: a release the proxy does not
// have fails with its answer, and nothing changes; a malformed one is refused.
func TestBumpRefusesWhatTheProxyDoesNotServe(t *testing.T) {
	root := repoRoot(t)
	before := sums(t, root)
	var out strings.Builder
	_, err := bump(root, "v1.14.999", &out)
	if err == nil || !strings.Contains(err.Error(), "the Go module proxy does not serve sigs.k8s.io/cluster-api@v1.14.999; it answered:") {
		t.Errorf("bump to a release that does not exist: %v; want the proxy's answer", err)
	}
	if _, err := bump(root, "1.15", &out); err == nil || !strings.Contains(err.Error(), `-version "1.15" is not a release: give one as v1.14.3`) {
		t.Errorf("bump to 1.15: %v", err)
	}
	unchanged(t, root, before)
}

// TestBumpMovesEveryPin runs a real bump in a copy of the pins that claims
// the release before the one in use: every pin and version line moves, the
// managers' module requires the release, and dated history is listed.
func TestBumpMovesEveryPin(t *testing.T) {
	root := repoRoot(t)
	inUse := releaseInUse(t, root)
	const older = "v0.0.1-pretend"
	dir := t.TempDir()
	copyFile := func(f string, edit func(string) string) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(edit(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pretend := func(s string) string { return strings.ReplaceAll(s, inUse, older) }
	keep := func(s string) string { return s }
	for _, p := range pins {
		copyFile(p.file, pretend)
	}
	copyFile("README.md", pretend)
	copyFile("docs/benchmarks.md", pretend)
	entries, err := os.ReadDir(filepath.Join(root, "hack/capi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(filepath.Join("hack/capi", e.Name()), keep)
	}
	// go.mod's api module stays at the release in use: moving it runs go mod
	// tidy, which needs the product's sources that the copy lacks.
	copyFile("go.mod", keep)
	git := exec.Command("sh", "-c", "git init -q && git add -A")
	git.Dir = dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	var out strings.Builder
	r, err := bump(dir, inUse, &out)
	if err != nil {
		t.Fatalf("bump from %s to %s: %v", older, inUse, err)
	}
	if !r.changed || r.from != older {
		t.Fatalf("bump reported %+v", r)
	}
	for _, p := range pins {
		data, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.re.FindStringSubmatch(string(data)); got == nil || got[2] != inUse {
			t.Errorf("%s pins %v, want %s", p.file, got, inUse)
		}
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), older) || !strings.Contains(string(readme), inUse) {
		t.Errorf("README.md still names %s, or not %s", older, inUse)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "hack/capi/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "sigs.k8s.io/cluster-api "+inUse) {
		t.Errorf("hack/capi/go.mod does not require sigs.k8s.io/cluster-api %s:\n%s", inUse, mod)
	}
	rootMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rootMod), "sigs.k8s.io/cluster-api/api "+inUse) {
		t.Errorf("go.mod does not require sigs.k8s.io/cluster-api/api %s", inUse)
	}
	// A comment beside a pin states a fact of the old release: it is
	// listed for a human, as dated history is.
	if strings.Join(r.left, " ") != "docs/benchmarks.md "+providersFile {
		t.Errorf("left naming %s: %v; want docs/benchmarks.md and %s's comment", older, r.left, providersFile)
	}
}

// releaseInUse is the Cluster API release the repository pins now.
func releaseInUse(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, providersFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(providersConst.FindSubmatch(data)[2])
}
