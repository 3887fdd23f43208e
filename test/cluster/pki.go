package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity covers any test run; the CA lives as long as the cluster.
const certValidity = 7 * 24 * time.Hour

// keyPair is a certificate with its key, PEM encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// pki is every credential the cluster needs, generated fresh per cluster.
type pki struct {
	ca                *keyPair
	apiserver         *keyPair // serving certificate
	admin             *keyPair // system:masters client
	controllerManager *keyPair
	scheduler         *keyPair
	// controller authenticates as a service account would (ControllerKubeconfig).
	controller *keyPair
	// node is the real node's kubelet (system:node:<name>); kubeletClient is the apiserver calling
	// kubelets (logs, exec).
	node, kubeletClient *keyPair
	serviceAccount      crypto.Signer
}

// newPKI creates a CA and the certificates signed by it; serviceIP is the
// kubernetes Service's address, which the serving certificate names. ECDSA
// P-256 keys keep generation in the low milliseconds.
func newPKI(serviceIP string) (*pki, error) {
	ca, err := newCA()
	if err != nil {
		return nil, err
	}
	p := &pki{ca: ca}
	if p.apiserver, err = ca.issue(servingTemplate(serviceIP)); err != nil {
		return nil, fmt.Errorf("apiserver certificate: %w", err)
	}
	if p.admin, err = ca.issue(clientTemplate("flotilla-admin", "system:masters")); err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	if p.controllerManager, err = ca.issue(clientTemplate("system:kube-controller-manager")); err != nil {
		return nil, fmt.Errorf("controller-manager certificate: %w", err)
	}
	if p.scheduler, err = ca.issue(clientTemplate("system:kube-scheduler")); err != nil {
		return nil, fmt.Errorf("scheduler certificate: %w", err)
	}
	if p.controller, err = ca.issue(clientTemplate(ControllerUser, "system:serviceaccounts", "system:serviceaccounts:"+controllerNamespace)); err != nil {
		return nil, fmt.Errorf("controller certificate: %w", err)
	}
	if p.node, err = ca.issue(clientTemplate("system:node:"+RealNodeName, "system:nodes")); err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	if p.kubeletClient, err = ca.issue(clientTemplate("flotilla-apiserver-kubelet-client", "system:masters")); err != nil {
		return nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	if p.serviceAccount, err = newKey(); err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	return p, nil
}

func newKey() (crypto.Signer, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func newCA() (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := baseTemplate(pkix.Name{CommonName: "flotilla-test-ca"})
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return newKeyPair(der, key)
}

// issue signs tmpl with the CA for a fresh key.
func (ca *keyPair) issue(tmpl *x509.Certificate) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(der, key)
}

func newKeyPair(der []byte, key crypto.Signer) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func encodePublicKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func baseTemplate(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour), // tolerate small clock skew
		NotAfter:     now.Add(certValidity),
	}
}

// servingTemplate covers every name a client on this machine or a pod
// inside the cluster uses for the apiserver.
func servingTemplate(serviceIP string) *x509.Certificate {
	tmpl := baseTemplate(pkix.Name{CommonName: "kube-apiserver"})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = []string{
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}
	return tmpl
}

func clientTemplate(user string, groups ...string) *x509.Certificate {
	tmpl := baseTemplate(pkix.Name{CommonName: user, Organization: groups})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return tmpl
}

// pkiFiles are the paths the control plane reads its credentials from.
type pkiFiles struct {
	caCert, servingCert, servingKey, saPublic, saPrivate string
	kubeletClientCert, kubeletClientKey                  string
}

// write stores what the processes read from disk under dir.
func (p *pki) write(dir string) (pkiFiles, error) {
	f := pkiFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saPublic:    filepath.Join(dir, "sa.pub"),
		saPrivate:   filepath.Join(dir, "sa.key"),

		kubeletClientCert: filepath.Join(dir, "kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(dir, "kubelet-client.key"),
	}
	saPub, err := encodePublicKey(p.serviceAccount)
	if err != nil {
		return f, err
	}
	saKey, err := encodeKey(p.serviceAccount)
	if err != nil {
		return f, err
	}
	files := map[string][]byte{
		f.caCert: p.ca.certPEM, f.servingCert: p.apiserver.certPEM, f.servingKey: p.apiserver.keyPEM,
		f.saPublic: saPub, f.saPrivate: saKey,
		f.kubeletClientCert: p.kubeletClient.certPEM, f.kubeletClientKey: p.kubeletClient.keyPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return f, nil
}
