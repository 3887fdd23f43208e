// Package inplaceupdate is the in-place update mechanism shared by Flotilla's workload modules (CloneSet
// first; Advanced StatefulSet and DaemonSet reuse it). It decides whether a pod can move from one pod
// template to another without being recreated, writes the change onto the pod in upstream OpenKruise's
// wire format (the apps.kruise.io/inplace-update-state annotation, the InPlaceUpdateReady condition) and
// tells when the kubelet has finished it. Everything here is pure: callers read and write the pods.
package inplaceupdate
