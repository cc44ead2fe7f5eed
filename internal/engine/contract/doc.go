// Package contract is Cluster API's contract as the engine reads it: core
// API versions and provider contract versions, the paths into provider
// objects, the two annotations upstream's api module does not name, a
// class's template slots and the kinds it generates, and whose dialect
// objects are made in. Every other engine package builds on it; it imports
// none of them. A cluster's objects themselves are clusterstate's.
package contract
