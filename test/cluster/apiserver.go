package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

const (
	// serviceCIDR is the Service IP range; kubernetesServiceIP is its first
	// address, which the apiserver gives the default/kubernetes Service.
	serviceCIDR         = "10.96.0.0/12"
	kubernetesServiceIP = "10.96.0.1"
	serviceIssuer       = "https://kubernetes.default.svc.cluster.local"
)

// startAPIServer starts kube-apiserver against etcdURL and waits for
// /readyz. It returns the server URL.
func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string, files pkiFiles) (string, error) {
	for attempt := 1; ; attempt++ {
		host, p, err := c.tryAPIServer(ctx, etcdURL, files)
		if err == nil {
			return host, nil
		}
		if p == nil || !portInUse(p) || attempt == portAttempts {
			return "", err
		}
		c.logf("kube-apiserver: port taken, retrying")
	}
}

func (c *Cluster) tryAPIServer(ctx context.Context, etcdURL string, files pkiFiles) (string, *process, error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	p, err := c.start("kube-apiserver", c.apiServerArgs(port, etcdURL, files), nil)
	if err != nil {
		return "", nil, err
	}
	client, err := c.adminHTTPClient()
	if err != nil {
		c.forget(p)
		return "", nil, err
	}
	if err := waitHealthy(ctx, p, host+"/readyz", client); err != nil {
		c.forget(p)
		return "", p, err
	}
	return host, p, nil
}

// apiServerArgs serves HTTPS on loopback only, authenticates with client
// certificates and service account tokens, authorizes with Node and RBAC.
func (c *Cluster) apiServerArgs(port int, etcdURL string, files pkiFiles) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoint reconciler refuses a loopback address; nothing in a
		// simulated pod dials the kubernetes Service anyway.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.dir, "apiserver"),
		"--tls-cert-file=" + files.servingCert,
		"--tls-private-key-file=" + files.servingKey,
		"--client-ca-file=" + files.caCert,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=" + serviceIssuer,
		"--service-account-key-file=" + files.saPublic,
		"--service-account-signing-key-file=" + files.saPrivate,
		"--service-cluster-ip-range=" + c.serviceCIDR(),
		"--allow-privileged=true",
		"--profiling=false",
		// Only a real node's kubelet is ever called (logs, exec, port-forward); it trusts the cluster CA.
		"--kubelet-client-certificate=" + files.kubeletClientCert,
		"--kubelet-client-key=" + files.kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP",
	}
	if c.realNode != nil {
		// Webhooks and aggregated APIs are called at an endpoint of their Service, a pod IP the host routes
		// to the real node's bridge: there is no kube-proxy to make Service IPs reachable.
		args = append(args, "--enable-aggregator-routing=true")
	}
	return args
}

// serviceCIDR is the Service range: a real node's own (its pods reach the
// kubernetes Service at its first address), else the default.
func (c *Cluster) serviceCIDR() string {
	if c.realNode != nil {
		return c.realNode.net.serviceCIDR.String()
	}
	return serviceCIDR
}

// serviceIP is the kubernetes Service's address, the first of serviceCIDR.
func (c *Cluster) serviceIP() string {
	if c.realNode != nil {
		return c.realNode.net.serviceIP.String()
	}
	return kubernetesServiceIP
}

// adminHTTPClient authenticates as the admin user, for /readyz.
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(c.pki.admin.certPEM, c.pki.admin.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("admin key pair: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.pki.ca.cert)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}, nil
}
