package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// shmDir is tmpfs on Linux: etcd's WAL there is fast and does not stall
// under pod churn the way a shared disk does.
const shmDir = "/dev/shm"

// portAttempts bounds retries when a picked port is taken before the child
// binds it.
const portAttempts = 3

// etcdDataRoot is where etcd data directories are created.
func etcdDataRoot() string {
	if info, err := os.Stat(shmDir); err == nil && info.IsDir() {
		return shmDir
	}
	return os.TempDir()
}

// startEtcd starts a single-member etcd on loopback ports and waits until
// it reports healthy. It returns the client URL.
func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	for attempt := 1; ; attempt++ {
		url, p, err := c.tryEtcd(ctx)
		if err == nil {
			return url, nil
		}
		if p == nil || !portInUse(p) || attempt == portAttempts {
			return "", err
		}
		c.logf("etcd: port taken, retrying")
	}
}

func (c *Cluster) tryEtcd(ctx context.Context) (string, *process, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return "", nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	dataDir := filepath.Join(c.etcdDir, "data")
	if err := os.RemoveAll(dataDir); err != nil { // a failed attempt may have left one
		return "", nil, fmt.Errorf("reset etcd data dir: %w", err)
	}
	args := []string{
		"--name=default",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true",           // the data dies with the cluster
		"--quota-backend-bytes=8589934592", // churn benchmarks must not hit the 2 GiB default
		"--log-level=warn",
	}
	p, err := c.start("etcd", args, nil)
	if err != nil {
		return "", nil, err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if err := waitHealthy(ctx, p, clientURL+"/health", client); err != nil {
		c.forget(p)
		return "", p, err
	}
	return clientURL, p, nil
}
