// Package plan decides what a ResourceDistribution does, values in and values out: which namespaces it
// targets, the copy it wants in each, which copies to create, update and delete, which namespaces conflict or
// are missing, and the status that reports it all with upstream's six conditions. It reads no client and no
// clock; the controller gathers its inputs and carries out its plans.
package plan
