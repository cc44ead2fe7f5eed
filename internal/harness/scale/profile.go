package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// cpuProfileSeconds is how long a CPU profile samples: long enough to
// average over many reconciles, short enough to end well inside the
// convergence it explains at 100 clusters.
const cpuProfileSeconds = 30

// profiler saves Go profiles of one side into dir, named after N.
type profiler struct {
	dir string
	n   int
	log io.Writer
}

// apiServerCPU starts a CPU profile of the API server of cfg (its
// /debug/pprof, open to the admin the kubeconfig names) and returns a
// function that waits for it to be saved.
func (p profiler) apiServerCPU(ctx context.Context, cfg *rest.Config) func() {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		logf(p.log, "  no API server profile: %v", err)
		return func() {}
	}
	return p.start(func() {
		p.save(ctx, hc, cfg.Host+fmt.Sprintf("/debug/pprof/profile?seconds=%d", cpuProfileSeconds), "apiserver-cpu")
	})
}

// processCPU starts a CPU profile of a process serving /debug/pprof at base.
func (p profiler) processCPU(ctx context.Context, base, name string) func() {
	return p.start(func() {
		p.save(ctx, http.DefaultClient, base+fmt.Sprintf("profile?seconds=%d", cpuProfileSeconds), name+"-cpu")
	})
}

// heap saves the in-use heap, after a collection, of a process serving
// /debug/pprof at base.
func (p profiler) heap(ctx context.Context, base, name string) {
	p.save(ctx, http.DefaultClient, base+"heap?gc=1", name+"-heap")
}

func (p profiler) start(f func()) func() {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return func() { <-done }
}

// save writes the profile at url to dir/n<N>-<name>.pprof and logs where,
// or why there is none: a profile is evidence for a reader, never a reason
// to fail the measurement.
func (p profiler) save(ctx context.Context, hc *http.Client, url, name string) {
	path := filepath.Join(p.dir, fmt.Sprintf("n%d-%s.pprof", p.n, name))
	err := func() error {
		ctx, cancel := context.WithTimeout(ctx, (cpuProfileSeconds+30)*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		logf(p.log, "  no %s profile: %v", name, err)
		return
	}
	logf(p.log, "  %s profile: %s (go tool pprof)", name, path)
}
