package freeport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestClaimPicksDistinctListeningPortsInRange(t *testing.T) {
	p := &Picker{Low: 15000, High: 15064, Rand: rand.New(rand.NewPCG(1, 2))}
	held, err := p.Claim(8)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(held)
	seen := map[int]bool{}
	for _, port := range Numbers(held) {
		if port < p.Low || port >= p.High {
			t.Errorf("port %d outside [%d, %d)", port, p.Low, p.High)
		}
		if seen[port] {
			t.Errorf("port %d claimed twice", port)
		}
		seen[port] = true
		// Held means taken: a second listen on it must fail.
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			t.Errorf("port %d is not held by its listener", port)
		}
	}
}

func TestPortsReleasesWhatItFound(t *testing.T) {
	p := &Picker{Low: 15100, High: 15200, Rand: rand.New(rand.NewPCG(3, 4))}
	ports, err := p.Ports(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d still taken after Ports returned: %v", port, err)
		}
		l.Close()
	}
}

func TestClaimFailsWhenTheRangeIsFull(t *testing.T) {
	p := &Picker{Low: 15300, High: 15302, Rand: rand.New(rand.NewPCG(5, 6))}
	held, err := p.Claim(2)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(held)
	_, err = p.Claim(1)
	if err == nil || !strings.Contains(err.Error(), "no free loopback port in [15300, 15302)") {
		t.Fatalf("got %v, want an error naming the exhausted range", err)
	}
	if _, err := p.Claim(3); err == nil || !strings.Contains(err.Error(), "smaller than the 3 ports") {
		t.Fatalf("got %v, want an error for more ports than the range has", err)
	}
}

func TestNewStaysBelowTheEphemeralRange(t *testing.T) {
	p := New()
	if p.Low != lowest || p.High <= p.Low || p.High > 65536 {
		t.Fatalf("range [%d, %d) is not a sane range below the ephemeral ports", p.Low, p.High)
	}
	ports, err := p.Ports(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range ports {
		if port >= p.High {
			t.Errorf("port %d is in the ephemeral range starting at %d", port, p.High)
		}
	}
}

// The in-memory provider binds its workload clusters' ports (from 20000 on)
// only when their control planes come up: a port picked there for a process
// of ours would keep a cluster's API server from ever starting.
func TestNewPicksBelowTheInMemoryProvidersPorts(t *testing.T) {
	p := New()
	if p.Low != 10000 || p.High > 20000 || p.High <= p.Low {
		t.Fatalf("New picks in [%d, %d), want a range in [10000, 20000)", p.Low, p.High)
	}
	ports, err := p.Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range ports {
		if port >= 20000 {
			t.Errorf("port %d is among the in-memory provider's", port)
		}
	}
}
