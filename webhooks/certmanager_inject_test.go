package webhooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var (
	ca       = []byte("CA")
	svcMode  = target{namespace: "flotilla-system", service: "flotilla-webhook"}
	portMode = target{namespace: "flotilla-system", service: "flotilla-webhook", port: 8443}
	urlMode  = target{host: "127.0.0.1", port: 9876}
	ipv6Mode = target{host: "::1", port: 9876}
)

func TestTargetHosts(t *testing.T) {
	tests := []struct {
		name string
		t    target
		want []string
	}{
		{name: "service", t: svcMode, want: []string{"flotilla-webhook.flotilla-system.svc", "flotilla-webhook.flotilla-system.svc.cluster.local"}},
		{name: "url", t: urlMode, want: []string{"127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.t.hosts()); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmissionClientConfig(t *testing.T) {
	installedSvc := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "kruise-rollout", Name: "kruise-rollout-webhook-service", Path: ptr.To("/mutate-apps-v1-deployment"), Port: ptr.To[int32](443),
	}}
	installedURL := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://old:1/validate-rollouts-kruise-io-rollout"), CABundle: []byte("old")}
	tests := []struct {
		name string
		t    target
		cur  admissionregistrationv1.WebhookClientConfig
		want admissionregistrationv1.WebhookClientConfig
	}{
		{name: "service keeps path and port", t: svcMode, cur: installedSvc,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
				Namespace: "flotilla-system", Name: "flotilla-webhook", Path: ptr.To("/mutate-apps-v1-deployment"), Port: ptr.To[int32](443)}}},
		{name: "service with configured port", t: portMode, cur: installedSvc,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
				Namespace: "flotilla-system", Name: "flotilla-webhook", Path: ptr.To("/mutate-apps-v1-deployment"), Port: ptr.To[int32](8443)}}},
		{name: "service from url keeps path", t: svcMode, cur: installedURL,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, Service: &admissionregistrationv1.ServiceReference{
				Namespace: "flotilla-system", Name: "flotilla-webhook", Path: ptr.To("/validate-rollouts-kruise-io-rollout")}}},
		{name: "url from service keeps path", t: urlMode, cur: installedSvc,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9876/mutate-apps-v1-deployment")}},
		{name: "url replaces url", t: urlMode, cur: installedURL,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9876/validate-rollouts-kruise-io-rollout")}},
		{name: "ipv6 host", t: ipv6Mode, cur: installedURL,
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://[::1]:9876/validate-rollouts-kruise-io-rollout")}},
		{name: "no path", t: urlMode, cur: admissionregistrationv1.WebhookClientConfig{},
			want: admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9876")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.t.admissionClientConfig(tt.cur, ca)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("clientConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCRDConversion(t *testing.T) {
	installed := &apiextensionsv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
			Namespace: "kruise-rollout", Name: "kruise-rollout-webhook-service", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}},
	}
	tests := []struct {
		name string
		t    target
		cur  *apiextensionsv1.WebhookConversion
		want *apiextensionsv1.WebhookConversion
	}{
		{name: "service", t: svcMode, cur: installed, want: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: ca, Service: &apiextensionsv1.ServiceReference{
				Namespace: "flotilla-system", Name: "flotilla-webhook", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}}}},
		{name: "url", t: urlMode, cur: installed, want: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9876/convert")}}},
		{name: "missing webhook section", t: svcMode, cur: nil, want: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1", "v1beta1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: ca, Service: &apiextensionsv1.ServiceReference{
				Namespace: "flotilla-system", Name: "flotilla-webhook", Path: ptr.To("/convert")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.cur.DeepCopy()
			got := tt.t.crdConversion(tt.cur, ca)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conversion (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.cur); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}

func TestNewCertManagerValidates(t *testing.T) {
	valid := Options{Namespace: "ns", SecretName: "s", ServiceName: "svc", CertDir: "/tmp/x", Client: fake.NewClientBuilder().Build()}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr bool
	}{
		{name: "service mode", mutate: func(*Options) {}},
		{name: "url mode", mutate: func(o *Options) { o.ServiceName, o.Host, o.Port = "", "127.0.0.1", 9876 }},
		{name: "no client", mutate: func(o *Options) { o.Client = nil }, wantErr: true},
		{name: "no namespace", mutate: func(o *Options) { o.Namespace = "" }, wantErr: true},
		{name: "no cert dir", mutate: func(o *Options) { o.CertDir = "" }, wantErr: true},
		{name: "no service or host", mutate: func(o *Options) { o.ServiceName = "" }, wantErr: true},
		{name: "url mode without port", mutate: func(o *Options) { o.Host = "127.0.0.1" }, wantErr: true},
		{name: "port out of range", mutate: func(o *Options) { o.Port = 70000 }, wantErr: true},
		{name: "renewal window too long", mutate: func(o *Options) { o.RenewBefore = 2 * DefaultCertValidity }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.mutate(&o)
			_, err := NewCertManager(o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
