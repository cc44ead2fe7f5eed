// Package rollout decides how a version change rolls out: the chain of
// versions (the class's list or an upgrade-plan extension's), the order in
// which the control plane and each pool move, and what holds or defers them.
package rollout
