// Package freeport finds loopback TCP ports for the processes this project
// starts (control planes, managers, the local agent). It picks them below the
// kernel's ephemeral range: a port the kernel hands out for ":0" can be taken
// by any outgoing connection between the pick and the process's own bind,
// which is how a test run once lost a manager's webhook port. It also keeps
// clear of the ports Cluster API's in-memory provider binds late.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Picker chooses ports in [Low, High) at random and keeps those nothing
// listens on.
type Picker struct {
	// Low and High bound the ports tried; High is exclusive.
	Low, High int
	// Rand chooses among them; tests pass a seeded one.
	Rand *rand.Rand
}

// lowest is where picks start: below it sit well-known and registered
// services a developer's machine may run.
const lowest = 10000

// rangeFile holds the kernel's ephemeral port range, "low high".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// inMemoryLow is where Cluster API's in-memory provider starts the ports of
// its workload clusters' API servers (20000 to 30000, upstream's
// DefaultMinPort and DefaultMaxPort). It hands them out in order when a
// cluster's infrastructure is made and binds one only when that cluster's
// first control plane machine comes up, without checking that nothing took
// it meanwhile. A restarted agent given such a port left a cluster whose
// control plane never came up (the CI run of 2026-11-30).
const inMemoryLow = 20000

// New is a Picker for this machine: from 10000 up to the in-memory
// provider's ports, or to the start of the ephemeral range if that is lower.
func New() *Picker {
	high := inMemoryLow
	if b, err := os.ReadFile(rangeFile); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lowest+1000 {
				high = min(high, n)
			}
		}
	}
	return &Picker{Low: lowest, High: high, Rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// attempts bounds the tries per port, so a machine with the whole range in
// use fails with an error instead of looping.
const attempts = 200

// Claim listens on n distinct free loopback ports and returns the
// listeners: the caller closes them just before its processes bind, so that
// no two picks in between return the same port.
func (p *Picker) Claim(n int) ([]net.Listener, error) {
	if p.High-p.Low < n {
		return nil, fmt.Errorf("port range [%d, %d) is smaller than the %d ports asked for", p.Low, p.High, n)
	}
	held := make([]net.Listener, 0, n)
	for len(held) < n {
		l, err := p.one()
		if err != nil {
			Close(held)
			return nil, err
		}
		held = append(held, l)
	}
	return held, nil
}

func (p *Picker) one() (net.Listener, error) {
	var last error
	for range attempts {
		port := p.Low + p.Rand.IntN(p.High-p.Low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no free loopback port in [%d, %d) after %d tries (last: %w): free some ports or stop stray control planes (`make local-down`)", p.Low, p.High, attempts, last)
}

// Ports claims n ports and releases them at once, for callers that pass the
// numbers to processes they start right after.
func (p *Picker) Ports(n int) ([]int, error) {
	held, err := p.Claim(n)
	if err != nil {
		return nil, err
	}
	defer Close(held)
	return Numbers(held), nil
}

// Numbers are the ports the listeners hold, in order.
func Numbers(ls []net.Listener) []int {
	ports := make([]int, len(ls))
	for i, l := range ls {
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// Close closes every listener; the ports are then free for their processes.
func Close(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}
