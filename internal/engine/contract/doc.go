// Package contract is Cluster API's contract as the engine reads it: labels
// and annotations, core API versions and provider contract versions, object
// keys and the observed state of a cluster's objects, a class's template
// slots and the kinds it generates, and whose dialect objects are made in.
// Every other engine package builds on it; it imports none of them.
package contract
