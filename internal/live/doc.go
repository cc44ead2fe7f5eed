// Package live is the management cluster as the plugin's commands reach it:
// connecting with kubectl's flags, finding a Topology or an upstream Cluster
// with spec.topology by reference, reading what the agent reads and planning
// against it, and the status reports `status` and `get` print. It knows no
// cobra: commands in internal/plugin turn flags into these calls, and its
// errors say what the user can do.
package live
