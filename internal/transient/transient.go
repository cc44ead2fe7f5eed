// Package transient tells an API error that says the API server could not
// answer now from one that says the request is wrong. A watch reads again
// after the first kind, and a fleet rollout writes its change again, rather
// than giving up on a cluster.
package transient

import (
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Is tells whether err says the API server, or a webhook it calls, could
// not answer now: overloaded, timed out, restarting, unreachable, or the
// connection dropped.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var netErr net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}
