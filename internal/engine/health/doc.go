// Package health is what a human reads about a topology: each part's
// observed rollout and conditions, its state (Ready, Degraded, …), the
// problems that explain it, and the text `status`, `get` and the editor show.
package health
