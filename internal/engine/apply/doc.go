// Package apply decides what to write: whether a desired object needs a
// server-side apply under our field manager, and the merge patch that
// changes a Cluster another manager owns without taking its fields.
package apply
