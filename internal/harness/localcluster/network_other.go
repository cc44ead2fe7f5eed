//go:build !linux

package localcluster

// InOwnNetwork reports whether this process runs in a network namespace
// of its own: never, where there are none.
func InOwnNetwork() bool { return false }

// RunInOwnNetwork does nothing where there are no network namespaces: the
// caller takes its turn on the fixed ports' lock.
func RunInOwnNetwork(...string) (code int, ran bool) { return 0, false }
