package webhooks

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var (
	t0        = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	svcHosts  = []string{"flotilla-webhook.flotilla-system.svc", "flotilla-webhook.flotilla-system.svc.cluster.local"}
	testCfg   = CertConfig{Hosts: svcHosts, CAValidity: 1000 * time.Hour, CertValidity: 100 * time.Hour, RenewBefore: 10 * time.Hour}
	otherHost = []string{"other.example.com"}
)

func mustBundle(t *testing.T, at time.Time, cfg CertConfig) Bundle {
	t.Helper()
	b, _, err := RenewBundle(clocktesting.NewFakePassiveClock(at), Bundle{}, cfg)
	if err != nil {
		t.Fatalf("RenewBundle: %v", err)
	}
	return b
}

func mustCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	certs, err := parseCertificates(data)
	if err != nil || len(certs) == 0 {
		t.Fatalf("parsing certificates: %v (%d found)", err, len(certs))
	}
	return certs
}

func TestRenewBundle(t *testing.T) {
	base := mustBundle(t, t0, testCfg)
	foreign := mustBundle(t, t0, testCfg)
	tests := []struct {
		name       string
		current    Bundle
		at         time.Time
		cfg        CertConfig
		wantAction RenewAction
		wantSameCA bool // CA certificate and key unchanged
		wantPrevCA bool // the old CA is kept as a second trusted CA
	}{
		{name: "empty secret", current: Bundle{}, at: t0, cfg: testCfg, wantAction: RenewCreated},
		{name: "garbage", current: Bundle{CACert: []byte("x"), CAKey: []byte("y"), Cert: []byte("z")}, at: t0, cfg: testCfg, wantAction: RenewCreated},
		{name: "valid is kept", current: base, at: t0.Add(50 * time.Hour), cfg: testCfg, wantAction: RenewKept, wantSameCA: true},
		{name: "serving cert due", current: base, at: t0.Add(91 * time.Hour), cfg: testCfg, wantAction: RenewServingIssued, wantSameCA: true},
		{name: "serving cert expired", current: base, at: t0.Add(200 * time.Hour), cfg: testCfg, wantAction: RenewServingIssued, wantSameCA: true},
		{name: "new host wanted", current: base, at: t0, cfg: withHosts(testCfg, slices.Concat(svcHosts, []string{"127.0.0.1"})), wantAction: RenewServingIssued, wantSameCA: true},
		{name: "serving key mismatch", current: withKey(base, foreign.Key), at: t0, cfg: testCfg, wantAction: RenewServingIssued, wantSameCA: true},
		{name: "cert from another CA", current: withCert(base, foreign.Cert, foreign.Key), at: t0, cfg: testCfg, wantAction: RenewServingIssued, wantSameCA: true},
		{name: "CA due", current: base, at: t0.Add(991 * time.Hour), cfg: testCfg, wantAction: RenewCARotated, wantPrevCA: true},
		{name: "CA key mismatch", current: withCAKey(base, foreign.CAKey), at: t0, cfg: testCfg, wantAction: RenewCARotated, wantPrevCA: true},
		{name: "CA expired", current: base, at: t0.Add(1001 * time.Hour), cfg: testCfg, wantAction: RenewCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, renewal, err := RenewBundle(clocktesting.NewFakePassiveClock(tt.at), tt.current, tt.cfg)
			if err != nil {
				t.Fatalf("RenewBundle: %v", err)
			}
			if renewal.Action != tt.wantAction {
				t.Fatalf("action = %q (cause %q), want %q", renewal.Action, renewal.Cause, tt.wantAction)
			}
			if (renewal.Cause == "") != (tt.wantAction == RenewKept) {
				t.Errorf("cause = %q for action %q", renewal.Cause, renewal.Action)
			}
			if err := ValidateBundle(got, tt.cfg.Hosts, tt.at, tt.cfg.RenewBefore); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
			sameCA := bytes.Equal(got.CAKey, tt.current.CAKey) && bytes.Equal(got.CACert, tt.current.CACert)
			if sameCA != tt.wantSameCA {
				t.Errorf("CA unchanged = %v, want %v", sameCA, tt.wantSameCA)
			}
			if tt.wantAction == RenewKept && !bytes.Equal(got.Cert, tt.current.Cert) {
				t.Errorf("serving certificate changed although the bundle was kept")
			}
			if tt.wantAction != RenewKept && bytes.Equal(got.Cert, tt.current.Cert) {
				t.Errorf("serving certificate not replaced")
			}
			checkPreviousCA(t, got, tt.current, tt.wantPrevCA)
		})
	}
}

func checkPreviousCA(t *testing.T, got, current Bundle, want bool) {
	t.Helper()
	certs := mustCerts(t, got.CACert)
	if !want {
		if len(certs) != 1 && !bytes.Equal(got.CACert, current.CACert) {
			t.Errorf("CA bundle holds %d certificates, want 1", len(certs))
		}
		return
	}
	old := mustCerts(t, current.CACert)[0]
	if len(certs) != 2 || !certs[1].Equal(old) || certs[0].Equal(old) {
		t.Errorf("CA bundle should be [new CA, previous CA], got %d certificates", len(certs))
	}
}

func TestRenewBundleRejectsConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  CertConfig
	}{
		{name: "no hosts", cfg: CertConfig{}},
		{name: "renew before longer than cert validity", cfg: CertConfig{Hosts: svcHosts, CertValidity: time.Hour, RenewBefore: 2 * time.Hour}},
		{name: "cert outlives CA", cfg: CertConfig{Hosts: svcHosts, CAValidity: time.Hour, CertValidity: 2 * time.Hour, RenewBefore: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := RenewBundle(clocktesting.NewFakePassiveClock(t0), Bundle{}, tt.cfg); err == nil {
				t.Fatal("want a configuration error")
			}
		})
	}
}

func TestRenewBundleDefaults(t *testing.T) {
	b := mustBundle(t, t0, CertConfig{Hosts: svcHosts})
	ca, cert := mustCerts(t, b.CACert)[0], mustCerts(t, b.Cert)[0]
	if got := ca.NotAfter.Sub(t0); got != DefaultCAValidity {
		t.Errorf("CA validity = %s, want %s", got, DefaultCAValidity)
	}
	if got := cert.NotAfter.Sub(t0); got != DefaultCertValidity {
		t.Errorf("serving validity = %s, want %s", got, DefaultCertValidity)
	}
	if cert.Subject.CommonName != svcHosts[0] {
		t.Errorf("CN = %q, want %q", cert.Subject.CommonName, svcHosts[0])
	}
}

func TestValidateBundle(t *testing.T) {
	ipCfg := withHosts(testCfg, []string{"127.0.0.1", "localhost"})
	svc, ip := mustBundle(t, t0, testCfg), mustBundle(t, t0, ipCfg)
	tests := []struct {
		name    string
		b       Bundle
		hosts   []string
		at      time.Time
		wantErr string
	}{
		{name: "service names", b: svc, hosts: svcHosts, at: t0},
		{name: "subset of names", b: svc, hosts: svcHosts[:1], at: t0},
		{name: "ip and host", b: ip, hosts: []string{"127.0.0.1", "localhost"}, at: t0},
		{name: "ip not covered", b: svc, hosts: []string{"127.0.0.1"}, at: t0, wantErr: "does not cover"},
		{name: "name not covered", b: svc, hosts: otherHost, at: t0, wantErr: "does not cover"},
		{name: "before validity", b: svc, hosts: svcHosts, at: t0.Add(-2 * time.Hour), wantErr: "not valid before"},
		{name: "in renewal window", b: svc, hosts: svcHosts, at: t0.Add(95 * time.Hour), wantErr: "renewal window"},
		{name: "CA in renewal window", b: svc, hosts: svcHosts, at: t0.Add(995 * time.Hour), wantErr: "CA:"},
		{name: "no serving cert", b: withCert(svc, nil, svc.Key), hosts: svcHosts, at: t0, wantErr: "no serving certificate"},
		{name: "no CA", b: Bundle{Cert: svc.Cert, Key: svc.Key}, hosts: svcHosts, at: t0, wantErr: "no CA certificate"},
		{name: "leaf as CA", b: withCA(svc, svc.Cert, svc.Key), hosts: svcHosts, at: t0, wantErr: "cannot sign"},
		{name: "bad CA key", b: withCAKey(svc, []byte("junk")), hosts: svcHosts, at: t0, wantErr: "CA key"},
		{name: "foreign CA", b: withCA(svc, ip.CACert, ip.CAKey), hosts: svcHosts, at: t0, wantErr: "not verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBundle(tt.b, tt.hosts, tt.at, testCfg.RenewBefore)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestRSAPKCS1BundleIsAccepted covers Secrets written by other tools,
// which commonly use RSA keys in PKCS#1 form.
func TestRSAPKCS1BundleIsAccepted(t *testing.T) {
	b := rsaBundle(t, svcHosts)
	got, renewal, err := RenewBundle(clocktesting.NewFakePassiveClock(t0), b, testCfg)
	if err != nil {
		t.Fatalf("RenewBundle: %v", err)
	}
	if renewal.Action != RenewKept || !bytes.Equal(got.CAKey, b.CAKey) || !bytes.Equal(got.Key, b.Key) {
		t.Fatalf("RSA bundle not kept: action %q cause %q", renewal.Action, renewal.Cause)
	}
}

func rsaBundle(t *testing.T, hosts []string) Bundle {
	t.Helper()
	caKey, leafKey := mustRSAKey(t), mustRSAKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(1000 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	ca, err := signKeyPair(caTmpl, caTmpl, caKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(100 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leaf, err := signKeyPair(leafTmpl, ca.cert, leafKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return Bundle{
		CACert: encodePEM("CERTIFICATE", ca.cert.Raw), CAKey: encodePEM("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)),
		Cert: encodePEM("CERTIFICATE", leaf.cert.Raw), Key: encodePEM("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(leafKey)),
	}
}

func mustRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func withHosts(cfg CertConfig, hosts []string) CertConfig {
	cfg.Hosts = hosts
	return cfg
}

func withKey(b Bundle, key []byte) Bundle {
	b.Key = key
	return b
}

func withCert(b Bundle, cert, key []byte) Bundle {
	b.Cert, b.Key = cert, key
	return b
}

func withCAKey(b Bundle, key []byte) Bundle {
	b.CAKey = key
	return b
}

func withCA(b Bundle, cert, key []byte) Bundle {
	b.CACert, b.CAKey = cert, key
	return b
}
