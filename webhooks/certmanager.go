package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Defaults for Options fields left zero.
const (
	DefaultResyncPeriod = 5 * time.Minute
	DefaultCertName     = "tls.crt"
	DefaultKeyName      = "tls.key"
)

// firstRetry is the delay before retrying a failed sync; it doubles up to
// the resync period.
const firstRetry = time.Second

// Options configures a CertManager.
type Options struct {
	// Namespace holds the Secret and, in service mode, the Service.
	Namespace string
	// SecretName is the Secret that stores the CA and serving certificate.
	SecretName string
	// ServiceName is the Service in front of the webhook server. Ignored
	// when Host is set.
	ServiceName string
	// Host switches to URL mode: webhooks are called at
	// https://<Host>:<Port><path> and the certificate is issued for Host.
	Host string
	// Port is the port written into every clientConfig: the Service port in
	// service mode (0 keeps the installed value), the server port in URL
	// mode (required there).
	Port int32
	// CertDir receives the serving certificate and key as CertName and
	// KeyName, where the webhook server's certificate watcher reloads them.
	CertDir  string
	CertName string
	KeyName  string
	// Webhook configurations whose webhooks get clientConfig and caBundle;
	// empty names or absent objects are skipped.
	MutatingWebhookConfigurationName   string
	ValidatingWebhookConfigurationName string
	// ConversionCRDs names the CRDs (<plural>.<group>) whose Webhook
	// conversion is pointed at this server's /convert. Each is read by name
	// at every sync; one that is absent, or converts otherwise, is left alone.
	ConversionCRDs []string
	// RenewBefore is how long before expiry a certificate is replaced.
	RenewBefore time.Duration
	// CAValidity and CertValidity are the lifetimes of new certificates.
	CAValidity   time.Duration
	CertValidity time.Duration
	// ResyncPeriod is the time between syncs after a successful one.
	ResyncPeriod time.Duration
	Clock        clock.Clock
	// Client reads and writes the few objects involved; it should not be
	// backed by an informer cache, so a Secret written by another replica is
	// seen at once and no cluster-wide informers are started.
	Client client.Client
	// Recorder, when set, receives an event on the Secret at every rotation.
	Recorder events.EventRecorder
}

// CertManager keeps the webhook serving certificate valid and makes the
// API server trust it. Every replica runs it, because every replica serves
// webhooks; replicas agree through the Secret.
type CertManager struct {
	opts   Options
	target target

	mu      sync.Mutex
	synced  bool
	lastErr error
}

var (
	_ manager.Runnable               = (*CertManager)(nil)
	_ manager.LeaderElectionRunnable = (*CertManager)(nil)
	_ healthz.Checker                = (*CertManager)(nil).Checker
)

// NewCertManager validates and defaults opts.
func NewCertManager(opts Options) (*CertManager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("invalid webhook certificate options: %w", err)
	}
	return &CertManager{opts: opts, target: opts.target()}, nil
}

func (o Options) target() target {
	return target{host: o.Host, port: o.Port, namespace: o.Namespace, service: o.ServiceName}
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.RenewBefore <= 0 {
		o.RenewBefore = DefaultRenewBefore
	}
	if o.CertName == "" {
		o.CertName = DefaultCertName
	}
	if o.KeyName == "" {
		o.KeyName = DefaultKeyName
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" || o.SecretName == "" || o.CertDir == "" {
		errs = append(errs, errors.New("namespace, secret name and cert dir are required"))
	}
	if o.Host == "" && o.ServiceName == "" {
		errs = append(errs, errors.New("either a service name or a host is required"))
	}
	if o.Port < 0 || o.Port > 65535 || (o.Host != "" && o.Port == 0) {
		errs = append(errs, fmt.Errorf("port %d out of range", o.Port))
	}
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.Host != "" || o.ServiceName != "" {
		errs = append(errs, o.certConfig(o.target()).withDefaults().validate())
	}
	return errors.Join(errs...)
}

// Hosts returns the names the serving certificate is issued for.
func (m *CertManager) Hosts() []string {
	return m.target.hosts()
}

func (m *CertManager) certConfig() CertConfig {
	return m.opts.certConfig(m.target)
}

func (o Options) certConfig(t target) CertConfig {
	return CertConfig{Hosts: t.hosts(), CAValidity: o.CAValidity, CertValidity: o.CertValidity, RenewBefore: o.RenewBefore}
}

// NeedLeaderElection is false: every replica serves webhooks and so needs
// the certificate on its own disk.
func (m *CertManager) NeedLeaderElection() bool {
	return false
}

// Start syncs at once, then every ResyncPeriod, retrying failures sooner.
func (m *CertManager) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("webhook-certs")
	ctx = logf.IntoContext(ctx, log)
	retry := firstRetry
	for {
		wait := m.opts.ResyncPeriod
		if err := m.Sync(ctx); err != nil {
			log.Error(err, "Syncing webhook certificates failed", "retryAfter", retry)
			wait, retry = retry, min(2*retry, m.opts.ResyncPeriod)
		} else {
			retry = firstRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.opts.Clock.After(wait):
		}
	}
}

// Sync makes the stored certificates valid, points every webhook and
// conversion at this server with the CA bundle, then writes the serving
// files. The CA bundle is published before the files change so the API
// server already trusts a new certificate when it is first served.
func (m *CertManager) Sync(ctx context.Context) error {
	err := m.sync(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr = err
	if err == nil {
		m.synced = true
	}
	return err
}

func (m *CertManager) sync(ctx context.Context) error {
	b, err := m.ensureBundle(ctx)
	if err != nil {
		return err
	}
	if err := m.inject(ctx, b.CACert); err != nil {
		return err
	}
	changed, err := writeServingFiles(m.opts.CertDir, m.opts.CertName, m.opts.KeyName, b)
	if err != nil {
		return err
	}
	if changed {
		logf.FromContext(ctx).Info("Wrote serving certificate", "dir", m.opts.CertDir)
	}
	return nil
}

// Ready is nil once a sync has completed: certificates on disk and every
// webhook and conversion pointed at this server.
func (m *CertManager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.synced {
		return nil
	}
	if m.lastErr != nil {
		return fmt.Errorf("webhook certificates not synced yet: %w", m.lastErr)
	}
	return errors.New("webhook certificates not synced yet")
}

// Checker adapts Ready to a readyz check.
func (m *CertManager) Checker(_ *http.Request) error {
	return m.Ready()
}
