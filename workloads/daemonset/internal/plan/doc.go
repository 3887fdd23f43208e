// Package plan is the Advanced DaemonSet controller's pure planning: which nodes should run a daemon pod
// (nodeSelector, node affinity, taints and tolerations, as kube's DaemonSet controller decides), which pods
// to create and delete to get there, which pods a rolling update replaces next under maxUnavailable,
// maxSurge, partition and rollingUpdate.selector, and the status upstream reports. Everything here is values
// in, values out: the controller reads the cluster, calls these functions and writes what they return.
package plan
