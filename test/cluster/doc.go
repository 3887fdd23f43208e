// Package cluster starts and stops a local Kubernetes control plane for
// integration tests, end-to-end tests, benchmarks and the sandbox: etcd
// (data on tmpfs when /dev/shm exists) and kube-apiserver on free loopback
// ports, optionally kube-controller-manager, kube-scheduler and kwok with
// simulated nodes whose behaviour the Stages in stages/ define, and a real
// node (kubelet, containerd, runc, bridge CNI; see realnode.go). All
// credentials are generated per cluster. Every child process runs in its
// own process group, is killed by the kernel if this process dies, and is
// stopped and reaped by Stop.
package cluster
