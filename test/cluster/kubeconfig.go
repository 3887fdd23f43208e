package cluster

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the single cluster, user and context of every
// kubeconfig written here.
const contextName = "flotilla-test"

// restConfig is a client configuration for user authenticating with its
// client certificate. Client-side throttling is relaxed the way envtest
// does it: the local apiserver is dedicated to the tests.
func restConfig(host string, ca, user *keyPair) *rest.Config {
	return &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   ca.certPEM,
			CertData: user.certPEM,
			KeyData:  user.keyPEM,
		},
		QPS:   1000,
		Burst: 2000,
	}
}

// writeKubeconfig writes a kubeconfig for cfg to <dir>/<name>.kubeconfig
// with the credentials embedded, and returns its path.
func writeKubeconfig(dir, name string, cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("write %s kubeconfig: %w", name, err)
	}
	return path, nil
}
