package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// ConvertPath is where the CRD conversion webhook is served.
const ConvertPath = "/convert"

// conversionReviewVersions is used only when a CRD asks for Webhook
// conversion without saying which review versions it accepts.
var conversionReviewVersions = []string{"v1", "v1beta1"}

// inject points every webhook and conversion at this server with caBundle.
// Each object is handled independently so one failure does not hold back
// the others.
func (m *CertManager) inject(ctx context.Context, caBundle []byte) error {
	return errors.Join(
		m.injectMutating(ctx, caBundle),
		m.injectValidating(ctx, caBundle),
		m.injectCRDs(ctx, caBundle),
	)
}

func (m *CertManager) injectMutating(ctx context.Context, caBundle []byte) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	found, err := m.getOptional(ctx, m.opts.MutatingWebhookConfigurationName, cfg)
	if !found || err != nil {
		return err
	}
	orig := cfg.DeepCopy()
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = m.target.admissionClientConfig(cfg.Webhooks[i].ClientConfig, caBundle)
	}
	return m.patchIfChanged(ctx, orig, cfg)
}

func (m *CertManager) injectValidating(ctx context.Context, caBundle []byte) error {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	found, err := m.getOptional(ctx, m.opts.ValidatingWebhookConfigurationName, cfg)
	if !found || err != nil {
		return err
	}
	orig := cfg.DeepCopy()
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = m.target.admissionClientConfig(cfg.Webhooks[i].ClientConfig, caBundle)
	}
	return m.patchIfChanged(ctx, orig, cfg)
}

// getOptional reads a cluster-scoped object; an empty name or a missing
// object is not an error, because a module may run without its webhooks.
func (m *CertManager) getOptional(ctx context.Context, name string, obj client.Object) (bool, error) {
	if name == "" {
		return false, nil
	}
	err := m.opts.Client.Get(ctx, types.NamespacedName{Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return true, nil
}

func (m *CertManager) injectCRDs(ctx context.Context, caBundle []byte) error {
	var errs []error
	for _, name := range m.opts.ConversionCRDs {
		errs = append(errs, m.injectCRD(ctx, name, caBundle))
	}
	return errors.Join(errs...)
}

func (m *CertManager) injectCRD(ctx context.Context, name string, caBundle []byte) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	found, err := m.getOptional(ctx, name, crd)
	if !found || err != nil || !webhookConversion(crd) {
		return err
	}
	orig := crd.DeepCopy()
	crd.Spec.Conversion.Webhook = m.target.crdConversion(crd.Spec.Conversion.Webhook, caBundle)
	return m.patchIfChanged(ctx, orig, crd)
}

// webhookConversion: the CRD asks for Webhook conversion (an older chart's CRD may not).
func webhookConversion(crd *apiextensionsv1.CustomResourceDefinition) bool {
	conv := crd.Spec.Conversion
	return conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter
}

// patchIfChanged sends a merge patch from orig to obj when they differ.
// The optimistic lock keeps a concurrent edit of a webhook list from being
// overwritten; the next sync retries.
func (m *CertManager) patchIfChanged(ctx context.Context, orig, obj client.Object) error {
	if equality.Semantic.DeepEqual(orig, obj) {
		return nil
	}
	kind := reflect.TypeOf(obj).Elem().Name()
	logf.FromContext(ctx).Info("Patching webhook client configuration", kind, klog.KObj(obj))
	patch := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	if err := m.opts.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("patching %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// target is where the API server reaches this webhook server.
type target struct {
	host      string // URL mode when set
	port      int32
	namespace string
	service   string
}

func (t target) urlMode() bool {
	return t.host != ""
}

func (t target) hosts() []string {
	if t.urlMode() {
		return []string{t.host}
	}
	svc := t.service + "." + t.namespace + ".svc"
	return []string{svc, svc + ".cluster.local"}
}

func (t target) url(path *string) string {
	u := "https://" + net.JoinHostPort(t.host, strconv.Itoa(int(t.port)))
	if path != nil && *path != "" {
		u += "/" + strings.TrimPrefix(*path, "/")
	}
	return u
}

// servicePort keeps the installed port unless one is configured.
func (t target) servicePort(current *int32) *int32 {
	if t.port != 0 {
		return ptr.To(t.port)
	}
	return current
}

// admissionClientConfig keeps the webhook's path and rewrites the rest.
func (t target) admissionClientConfig(cur admissionregistrationv1.WebhookClientConfig, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	out := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	curPath, curPort := admissionEndpoint(cur)
	if t.urlMode() {
		out.URL = ptr.To(t.url(curPath))
		return out
	}
	out.Service = &admissionregistrationv1.ServiceReference{
		Namespace: t.namespace, Name: t.service, Path: curPath, Port: t.servicePort(curPort),
	}
	return out
}

func admissionEndpoint(cur admissionregistrationv1.WebhookClientConfig) (*string, *int32) {
	if cur.Service != nil {
		return cur.Service.Path, cur.Service.Port
	}
	return urlPath(cur.URL), nil
}

// crdConversion points a CRD's conversion at ConvertPath.
func (t target) crdConversion(cur *apiextensionsv1.WebhookConversion, caBundle []byte) *apiextensionsv1.WebhookConversion {
	out := cur.DeepCopy()
	if out == nil {
		out = &apiextensionsv1.WebhookConversion{}
	}
	if len(out.ConversionReviewVersions) == 0 {
		out.ConversionReviewVersions = conversionReviewVersions
	}
	out.ClientConfig = t.crdClientConfig(crdServicePort(out.ClientConfig), caBundle)
	return out
}

func (t target) crdClientConfig(curPort *int32, caBundle []byte) *apiextensionsv1.WebhookClientConfig {
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: caBundle}
	if t.urlMode() {
		cc.URL = ptr.To(t.url(ptr.To(ConvertPath)))
		return cc
	}
	cc.Service = &apiextensionsv1.ServiceReference{
		Namespace: t.namespace, Name: t.service, Path: ptr.To(ConvertPath), Port: t.servicePort(curPort),
	}
	return cc
}

func crdServicePort(cc *apiextensionsv1.WebhookClientConfig) *int32 {
	if cc == nil || cc.Service == nil {
		return nil
	}
	return cc.Service.Port
}

func urlPath(raw *string) *string {
	if raw == nil {
		return nil
	}
	u, err := url.Parse(*raw)
	if err != nil || u.Path == "" {
		return nil
	}
	return ptr.To(u.Path)
}
