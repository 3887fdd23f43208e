package webhooks

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// ReadyzCheckName is the readyz check Register adds.
const ReadyzCheckName = "webhook-certs"

// EventSource names the component on certificate rotation events.
const EventSource = "flotilla-webhook-certs"

// Register wires certificate management and CRD conversion into mgr: it
// serves ConvertPath with the converters the modules put in conversions,
// adds a CertManager runnable and a readyz check that
// passes after the first sync. Fields of opts left empty are filled from
// mgr: CertDir, CertName and KeyName (and Port in URL mode) from its
// webhook server, an uncached Client with its own scheme, and a Recorder.
// Call it once, before mgr.Start.
func Register(mgr manager.Manager, opts Options, conversions conversion.Registry) (*CertManager, error) {
	srv := mgr.GetWebhookServer()
	srv.Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), conversions))
	opts = optionsFromServer(opts, srv)
	opts, err := optionsFromManager(opts, mgr)
	if err != nil {
		return nil, err
	}
	cm, err := NewCertManager(opts)
	if err != nil {
		return nil, err
	}
	if err := cm.ensurePlaceholderFiles(); err != nil {
		return nil, fmt.Errorf("preparing webhook cert dir: %w", err)
	}
	if err := mgr.Add(cm); err != nil {
		return nil, fmt.Errorf("adding webhook certificate manager: %w", err)
	}
	if err := mgr.AddReadyzCheck(ReadyzCheckName, cm.Checker); err != nil {
		return nil, fmt.Errorf("adding webhook certificate readyz check: %w", err)
	}
	return cm, nil
}

// optionsFromServer reads the defaulted options of controller-runtime's
// server (defaulting happens on its first Register), so the files land
// where its certificate watcher looks.
func optionsFromServer(opts Options, srv webhook.Server) Options {
	ds, ok := srv.(*webhook.DefaultServer)
	if !ok {
		return opts
	}
	if opts.CertDir == "" {
		opts.CertDir = ds.Options.CertDir
	}
	if opts.CertName == "" {
		opts.CertName = ds.Options.CertName
	}
	if opts.KeyName == "" {
		opts.KeyName = ds.Options.KeyName
	}
	if opts.Host != "" && opts.Port == 0 {
		opts.Port = int32(ds.Options.Port) //nolint:gosec // a listening port fits
	}
	return opts
}

func optionsFromManager(opts Options, mgr manager.Manager) (Options, error) {
	if opts.Recorder == nil {
		opts.Recorder = mgr.GetEventRecorder(EventSource)
	}
	if opts.Client != nil {
		return opts, nil
	}
	scheme, err := certScheme()
	if err != nil {
		return opts, err
	}
	c, err := client.New(mgr.GetConfig(), client.Options{
		Scheme: scheme, HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper(),
	})
	if err != nil {
		return opts, fmt.Errorf("creating webhook certificate client: %w", err)
	}
	opts.Client = c
	return opts, nil
}

// certScheme holds just the kinds the CertManager touches, so it does not
// depend on what the manager's scheme registers.
func certScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, admissionregistrationv1.AddToScheme, apiextensionsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building webhook certificate scheme: %w", err)
		}
	}
	return s, nil
}
