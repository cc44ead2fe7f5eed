package scale

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-topology/kubectl-topology/internal/apiwrites"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times;
// 100 on every Linux this runs on.
const clockTicks = 100

// Usage is what a process has used since it started.
type Usage struct {
	// PeakRSS is its peak resident set size in bytes (VmHWM).
	PeakRSS int64
	// RSS is its resident set size when read, in bytes (VmRSS): beside
	// PeakRSS over time it says in which phase the peak was reached.
	RSS int64
	// FileRSS is the part of RSS mapped from files (RssFile), the binary's
	// own pages above all: what no change to the heap can shrink.
	FileRSS int64
	// CPU is the user and system time it has run.
	CPU time.Duration
}

// ReadUsage reads the usage of process pid from /proc.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	fields := map[string]*int64{"VmHWM": &u.PeakRSS, "VmRSS": &u.RSS, "RssFile": &u.FileRSS}
	for _, line := range strings.Split(string(status), "\n") {
		key, rest, _ := strings.Cut(line, ":")
		into, ok := fields[key]
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		if err != nil {
			return u, fmt.Errorf("process %d: %s %q: %w", pid, key, rest, err)
		}
		*into = kib * 1024
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	u.CPU, err = cpuFromStat(string(stat))
	if err != nil {
		return u, fmt.Errorf("process %d: %w", pid, err)
	}
	return u, nil
}

// cpuFromStat reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line; the command name before them may hold spaces, so fields are counted
// from its closing parenthesis.
func cpuFromStat(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("unreadable /proc stat %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state): utime is field 14, stime 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat %q", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// Metrics is one scrape of a Prometheus text endpoint.
type Metrics string

// Scrape reads url's metrics.
func Scrape(ctx context.Context, url string) (Metrics, error) {
	return ScrapeWith(ctx, http.DefaultClient, url)
}

// ScrapeWith reads url's metrics through hc: the API server's, say, which
// asks who is reading.
func ScrapeWith(ctx context.Context, hc *http.Client, url string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading metrics at %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("reading metrics at %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	return Metrics(data), err
}

// each calls fn with every sample line whose metric name is exactly name
// and whose labels contain every filter, and the sample's value.
func (m Metrics) each(name string, filters []string, fn func(line string, value float64)) {
	sc := bufio.NewScanner(strings.NewReader(string(m)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		match := true
		for _, f := range filters {
			match = match && strings.Contains(line, f)
		}
		fields := strings.Fields(line)
		if !match || len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			fn(line, v)
		}
	}
}

// Sum adds the samples of metric name whose labels contain every filter,
// e.g. `method="PATCH"`.
func (m Metrics) Sum(name string, filters ...string) float64 {
	var sum float64
	m.each(name, filters, func(_ string, v float64) { sum += v })
	return sum
}

// Quantile estimates the q-quantile of histogram name over the series whose
// labels contain every filter, as Prometheus's histogram_quantile does:
// linear within the bucket the rank falls in. It is 0 without samples, and
// the highest finite bound when the rank falls past it.
func (m Metrics) Quantile(q float64, name string, filters ...string) float64 {
	counts := map[float64]float64{} // upper bound → cumulative count, summed over series
	m.each(name+"_bucket", filters, func(line string, v float64) {
		_, rest, found := strings.Cut(line, `le="`)
		le, _, _ := strings.Cut(rest, `"`)
		if bound, err := strconv.ParseFloat(le, 64); found && err == nil { // "+Inf" parses as +Inf
			counts[bound] += v
		}
	})
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || counts[bounds[len(bounds)-1]] == 0 {
		return 0
	}
	rank := q * counts[bounds[len(bounds)-1]]
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		if counts[b] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			return lower + (b-lower)*(rank-below)/(counts[b]-below)
		}
		lower, below = b, counts[b]
	}
	return lower
}

// WebhookLatency is the mean and p99 time a controller-runtime process spent
// in its webhook at path, from its latency histogram; ok is false before the
// first request.
func (m Metrics) WebhookLatency(path string) (mean, p99 time.Duration, ok bool) {
	count := m.WebhookRequests(path)
	if count == 0 {
		return 0, 0, false
	}
	seconds := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	return seconds(m.Sum(webhookLatency+"_sum", webhookFilter(path)) / count), seconds(m.Quantile(0.99, webhookLatency, webhookFilter(path))), true
}

// WebhookRequests is how many admission requests a controller-runtime
// process answered in its webhook at path.
func (m Metrics) WebhookRequests(path string) float64 {
	return m.Sum(webhookLatency+"_count", webhookFilter(path))
}

// webhookLatency is controller-runtime's histogram of its webhooks' latency.
const webhookLatency = "controller_runtime_webhook_latency_seconds"

// webhookFilter selects the series of the webhook at path.
func webhookFilter(path string) string { return `webhook="` + path + `"` }

// requestMethods are the HTTP methods of a client's API requests; all but
// GET write.
var requestMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// RequestsByMethod is the process's client's API requests per HTTP method.
func (m Metrics) RequestsByMethod() map[string]float64 {
	out := make(map[string]float64, len(requestMethods))
	for _, method := range requestMethods {
		out[method] = m.Sum("rest_client_requests_total", `method="`+method+`"`)
	}
	return out
}

// Writes is how many write requests (create, update, patch, delete) the
// process's client has made.
func (m Metrics) Writes() float64 {
	byMethod := m.RequestsByMethod()
	return byMethod["POST"] + byMethod["PUT"] + byMethod["PATCH"] + byMethod["DELETE"]
}

// WritesByResource is the agent's API writes (apiwrites.MetricName) as
// "verb resource" → count, dry runs marked as such; empty for a process that
// does not count them, or on an unreadable scrape.
func (m Metrics) WritesByResource() map[string]float64 {
	out := map[string]float64{}
	m.counters(apiwrites.MetricName, func(labels map[string]string, v float64) {
		key := labels["verb"] + " " + labels["resource"]
		if labels["dry_run"] == "true" {
			key += " (dry run)"
		}
		out[key] += v
	})
	return out
}

// counters calls fn with the labels and value of each series of the counter
// name; none on an unreadable scrape or where there is no such counter.
func (m Metrics) counters(name string, fn func(labels map[string]string, v float64)) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(m)))
	if err != nil || families[name] == nil {
		return
	}
	for _, s := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		fn(labels, s.GetCounter().GetValue())
	}
}

// ServerWritesByResource is an API server's writes from every client
// (apiserver_request_total) as "verb resource[/subresource]" → count, dry runs
// included; empty on an unreadable scrape. Cluster API's controllers make
// most of them, which is what sets a side's time on two cores.
func (m Metrics) ServerWritesByResource() map[string]float64 {
	out := map[string]float64{}
	m.counters("apiserver_request_total", func(labels map[string]string, v float64) {
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		default:
			return
		}
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		out[key] += v
	})
	return out
}

// largest lists the n largest counts as "key count", largest first (ties by
// key), and how many were left out.
func largest(counts map[string]float64, n int) string {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, counts[k]))
	}
	if len(keys) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(keys)-n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
