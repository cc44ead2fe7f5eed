// Package fleet decides how a TopologyRollout moves a fleet of clusters: the
// waves the clusters fall into, which cluster may start now (its wave, the
// clusters in flight, the failure budget, the maintenance windows), and how
// each cluster's phase follows what is observed of it. It reads no cluster:
// the agent's rollout controller observes and writes, the plugin's dry run
// and the webhook ask the same functions.
package fleet
