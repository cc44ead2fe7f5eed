package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownNetworkEnv marks a process RunInOwnNetwork started in a network
// namespace of its own.
const ownNetworkEnv = "TOPOLOGY_OWN_NETWORK"

// InOwnNetwork reports whether this process runs in a network namespace
// RunInOwnNetwork made for it, where the providers' fixed ports are its own.
func InOwnNetwork() bool { return os.Getenv(ownNetworkEnv) == "1" }

// RunInOwnNetwork runs this program again, same arguments, in a new network
// namespace with only a loopback interface, and returns its exit code with
// ran true. Test suites with providers do so to run side by side: a port
// no flag moves (the in-memory backend's) is then one per suite, not one
// per machine. ran is false where it cannot (not root, or not allowed): the
// caller goes on here and takes its turn on the fixed ports' lock. In the
// new namespace it brings the loopback interface up and returns ran false.
func RunInOwnNetwork(env ...string) (code int, ran bool) {
	if InOwnNetwork() {
		if err := loopbackUp(); err != nil {
			fmt.Fprintf(os.Stderr, "local control plane: %v\n", err)
			return 1, true
		}
		return 0, false
	}
	if os.Geteuid() != 0 {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		return 0, false
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(append(os.Environ(), env...), ownNetworkEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Pdeathsig: if this process dies, the suite stops its control plane.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGTERM}
	// Signals go test sends (SIGQUIT on its timeout) reach the suite.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "local control plane: no network namespace of its own (%v); taking turns on the providers' fixed ports\n", err)
		return 0, false
	}
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode(), true
	default:
		fmt.Fprintf(os.Stderr, "local control plane: the suite in its own network namespace ended: %v\n", err)
		return 1, true
	}
}

// loopbackUp brings up the loopback interface, which a new network
// namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("a socket to bring the loopback interface up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing the loopback interface up: %w", err)
	}
	return nil
}
