package webhooks

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/utils/clock"
)

// Secret keys, the same as upstream's webhook certificate Secret so an
// existing Secret keeps working.
const (
	CACertKey = "ca-cert.pem"
	CAKeyKey  = "ca-key.pem"
	CertKey   = "cert.pem"
	KeyKey    = "key.pem"
)

// Defaults for CertConfig fields left zero.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
	DefaultRenewBefore  = 30 * 24 * time.Hour
)

// backdate tolerates clocks that lag behind the issuer's.
const backdate = time.Hour

// Bundle is the PEM material stored in the Secret. CACert may hold more
// than one certificate: the first is the signing CA (matching CAKey), the
// rest are predecessors still trusted so replicas that have not yet
// picked up a rotation keep being accepted.
type Bundle struct {
	CACert []byte
	CAKey  []byte
	Cert   []byte
	Key    []byte
}

// CertConfig says which names the serving certificate must cover and how
// long certificates live.
type CertConfig struct {
	// Hosts are DNS names or IP addresses; the first becomes the subject CN.
	Hosts        []string
	CAValidity   time.Duration
	CertValidity time.Duration
	// RenewBefore is how long before expiry a certificate is replaced.
	RenewBefore time.Duration
}

// RenewAction says what RenewBundle did.
type RenewAction string

// Renew actions; they double as event reasons.
const (
	RenewKept          RenewAction = ""
	RenewCreated       RenewAction = "CertificatesCreated"
	RenewCARotated     RenewAction = "CertificateAuthorityRotated"
	RenewServingIssued RenewAction = "ServingCertificateRenewed"
)

// Renewal reports what RenewBundle decided and why.
type Renewal struct {
	Action RenewAction
	// Cause says why the stored bundle was not kept; empty when kept.
	Cause string
}

// keyPair is a parsed certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (c CertConfig) withDefaults() CertConfig {
	if c.CAValidity <= 0 {
		c.CAValidity = DefaultCAValidity
	}
	if c.CertValidity <= 0 {
		c.CertValidity = DefaultCertValidity
	}
	if c.RenewBefore <= 0 {
		c.RenewBefore = DefaultRenewBefore
	}
	return c
}

// validate rejects configurations under which a fresh certificate would
// already be due for renewal, which would rotate it on every sync.
func (c CertConfig) validate() error {
	if len(c.Hosts) == 0 {
		return errors.New("no hosts for the serving certificate")
	}
	if c.RenewBefore >= c.CertValidity || c.CertValidity > c.CAValidity {
		return fmt.Errorf("need renewBefore (%s) < cert validity (%s) <= CA validity (%s)", c.RenewBefore, c.CertValidity, c.CAValidity)
	}
	return nil
}

// RenewBundle returns the bundle to store: the current one when it is
// valid and not due for renewal, a new serving certificate signed by the
// current CA when only the serving certificate needs replacing, or a new
// CA and serving certificate otherwise.
func RenewBundle(clk clock.PassiveClock, current Bundle, cfg CertConfig) (Bundle, Renewal, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Bundle{}, Renewal{}, err
	}
	now := clk.Now()
	ca, caErr := parseCA(current)
	if caErr == nil {
		caErr = checkLifetime(ca.cert, now, cfg.RenewBefore)
	}
	if caErr != nil {
		return rotateCA(now, current, cfg, caErr)
	}
	servingErr := checkServing(current, ca.cert, cfg.Hosts, now, cfg.RenewBefore)
	if servingErr == nil {
		return current, Renewal{}, nil
	}
	next, err := withServing(now, current, ca, cfg)
	if err != nil {
		return Bundle{}, Renewal{}, err
	}
	return next, Renewal{Action: RenewServingIssued, Cause: servingErr.Error()}, nil
}

// ValidateBundle checks that the CA signs the serving certificate, that the
// certificate covers hosts, and that neither expires within renewBefore.
func ValidateBundle(b Bundle, hosts []string, now time.Time, renewBefore time.Duration) error {
	ca, err := parseCA(b)
	if err != nil {
		return err
	}
	if err := checkLifetime(ca.cert, now, renewBefore); err != nil {
		return fmt.Errorf("CA: %w", err)
	}
	return checkServing(b, ca.cert, hosts, now, renewBefore)
}

func rotateCA(now time.Time, current Bundle, cfg CertConfig, cause error) (Bundle, Renewal, error) {
	ca, err := newCA(now, cfg.CAValidity)
	if err != nil {
		return Bundle{}, Renewal{}, err
	}
	caKeyPEM, err := encodeKey(ca.key)
	if err != nil {
		return Bundle{}, Renewal{}, err
	}
	next := Bundle{CACert: encodePEM("CERTIFICATE", ca.cert.Raw), CAKey: caKeyPEM}
	if next, err = withServing(now, next, ca, cfg); err != nil {
		return Bundle{}, Renewal{}, err
	}
	action := RenewCreated
	if prev := previousCA(current, now); prev != nil {
		next.CACert = append(next.CACert, prev...)
		action = RenewCARotated
	}
	return next, Renewal{Action: action, Cause: cause.Error()}, nil
}

// previousCA returns the PEM of the stored signing CA when it is still
// within its validity, so it stays trusted while replicas catch up.
func previousCA(current Bundle, now time.Time) []byte {
	certs, err := parseCertificates(current.CACert)
	if err != nil || len(certs) == 0 || !certs[0].IsCA || now.After(certs[0].NotAfter) {
		return nil
	}
	return encodePEM("CERTIFICATE", certs[0].Raw)
}

// withServing returns b with a new serving certificate signed by ca; the
// CA material of b is kept byte for byte.
func withServing(now time.Time, b Bundle, ca *keyPair, cfg CertConfig) (Bundle, error) {
	certPEM, keyPEM, err := issueServing(ca, cfg.Hosts, now, cfg.CertValidity)
	if err != nil {
		return Bundle{}, err
	}
	b.Cert, b.Key = certPEM, keyPEM
	return b, nil
}

func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "flotilla-webhook-ca", Organization: []string{"flotilla"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return signKeyPair(tmpl, tmpl, key, key)
}

func issueServing(ca *keyPair, hosts []string, now time.Time, validity time.Duration) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-backdate),
		NotAfter:     minTime(now.Add(validity), ca.cert.NotAfter),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	tmpl.DNSNames, tmpl.IPAddresses = splitHosts(hosts)
	kp, err := signKeyPair(tmpl, ca.cert, key, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodePEM("CERTIFICATE", kp.cert.Raw), keyPEM, nil
}

func signKeyPair(tmpl, parent *x509.Certificate, key crypto.Signer, signer crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing signed certificate: %w", err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

func splitHosts(hosts []string) ([]string, []net.IP) {
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		dns = append(dns, h)
	}
	return dns, ips
}

// parseCA parses the signing CA (the first certificate of CACert) and
// checks that CAKey belongs to it.
func parseCA(b Bundle) (*keyPair, error) {
	certs, err := parseCertificates(b.CACert)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if len(certs) == 0 {
		return nil, errors.New("no CA certificate")
	}
	if !certs[0].IsCA || certs[0].KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("CA certificate cannot sign certificates")
	}
	key, err := parseKey(b.CAKey)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, errors.New("CA key does not match the CA certificate")
	}
	return &keyPair{cert: certs[0], key: key}, nil
}

// checkServing checks the serving certificate against its key, the CA,
// the wanted hosts and the renewal deadline.
func checkServing(b Bundle, ca *x509.Certificate, hosts []string, now time.Time, renewBefore time.Duration) error {
	certs, err := parseCertificates(b.Cert)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	if len(certs) == 0 {
		return errors.New("no serving certificate")
	}
	key, err := parseKey(b.Key)
	if err != nil {
		return fmt.Errorf("serving key: %w", err)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return errors.New("serving key does not match the serving certificate")
	}
	if err := verifySignedBy(certs[0], ca, now); err != nil {
		return err
	}
	if err := checkHosts(certs[0], hosts); err != nil {
		return err
	}
	return checkLifetime(certs[0], now, renewBefore)
}

func verifySignedBy(cert, ca *x509.Certificate, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := cert.Verify(opts); err != nil {
		return fmt.Errorf("serving certificate not verified by the CA: %w", err)
	}
	return nil
}

func checkHosts(cert *x509.Certificate, hosts []string) error {
	for _, h := range hosts {
		if err := cert.VerifyHostname(h); err != nil {
			return fmt.Errorf("serving certificate does not cover %q", h)
		}
	}
	return nil
}

// checkLifetime fails when now is outside the certificate's validity or
// within renewBefore of its end.
func checkLifetime(cert *x509.Certificate, now time.Time, renewBefore time.Duration) error {
	if now.Before(cert.NotBefore) {
		return fmt.Errorf("certificate %q not valid before %s", cert.Subject.CommonName, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	if !now.Add(renewBefore).Before(cert.NotAfter) {
		return fmt.Errorf("certificate %q expires at %s, within the renewal window", cert.Subject.CommonName, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %w", err)
		}
		certs = append(certs, cert)
	}
	return certs, nil
}

// parseKey accepts PKCS#8, PKCS#1 RSA and SEC 1 EC keys, so Secrets
// written by other tools are read too.
func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if key, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return asSigner(key)
	}
	if key, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	if key, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	return nil, fmt.Errorf("unsupported private key in PEM block %q", block.Type)
}

func asSigner(key any) (crypto.Signer, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return encodePEM("PRIVATE KEY", der), nil
}

func encodePEM(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
