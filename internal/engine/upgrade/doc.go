// Package upgrade decides how one cluster takes a version: the chain of
// versions (the class's list or an upgrade-plan extension's), the sequence in
// which the control plane and each pool move, and what holds or defers them.
// "Rollout" is the fleet's word (internal/engine/fleet); here it is a sequence.
package upgrade
