package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	sidecarsetadmission "github.com/flotilla-dev/flotilla/sidecarset/admission"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The validating webhook lists SidecarSets, reads the namespaces they name and the whitelist ConfigMap.
// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=configmaps,verbs=get;list;watch

// Paths of the SidecarSet admission webhooks: upstream's (no other module serves the mutating one).
const (
	MutateSidecarSetPath   = "/mutate-apps-kruise-io-v1alpha1-sidecarset"
	ValidateSidecarSetPath = "/validate-apps-kruise-io-v1alpha1-sidecarset"
)

// WebhookOptions configure the SidecarSet webhooks.
type WebhookOptions struct {
	// ConfigurationNamespace holds the kruise-configuration ConfigMap whose key
	// SidecarSet_PatchPodMetadata_WhiteList lists the pod annotations patchPodMetadata may set.
	ConfigurationNamespace string
	// Rules are the feature gates of the validation.
	Rules sidecarsetadmission.Options
}

// RegisterWebhooks serves the SidecarSet defaulting and validating webhooks on srv. reader lists the
// SidecarSets and reads namespaces and the whitelist ConfigMap (a cache is fine: one created a moment ago
// may be missed, as by upstream's); scheme must know core/v1 and the apps.kruise.io v1alpha1 kinds. Call it
// once, before the server starts.
func RegisterWebhooks(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme, opts WebhookOptions) error {
	if srv == nil || reader == nil || scheme == nil {
		return errors.New("registering the SidecarSet webhooks: server, reader and scheme are required")
	}
	webhooks.Serve(srv, handlers(reader, admission.NewDecoder(scheme), opts))
	return nil
}

func handlers(reader client.Reader, decoder admission.Decoder, opts WebhookOptions) map[string]admission.Handler {
	a := &setAdmission{reader: reader, decoder: decoder, opts: opts}
	return map[string]admission.Handler{
		MutateSidecarSetPath:   webhooks.CreatesAndUpdates(a.defaults),
		ValidateSidecarSetPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// setAdmission answers both webhooks.
type setAdmission struct {
	reader  client.Reader
	decoder admission.Decoder
	opts    WebhookOptions
}

// defaults answers with the patch that applies upstream's defaults and the hash annotations.
func (a *setAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := webhooks.Decode[kruiseappsv1alpha1.SidecarSet](a.decoder, req, "SidecarSet")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	sidecarsetadmission.Default(out, old)
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	return webhooks.PatchOrReplace(req.Object.Raw, cur, out)
}

// validate refuses a SidecarSet that breaks upstream's rules, naming every faulty field.
func (a *setAdmission) validate(ctx context.Context, req admission.Request) admission.Response {
	cur, old, err := webhooks.Decode[kruiseappsv1alpha1.SidecarSet](a.decoder, req, "SidecarSet")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	cluster, err := a.cluster(ctx, cur)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if errs := sidecarsetadmission.Validate(cur, old, cluster, a.opts.Rules); len(errs) > 0 {
		// 422 (Invalid), as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// cluster gathers what the validation reads: the SidecarSets, the labels of the namespaces they name, and
// the whitelist.
func (a *setAdmission) cluster(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) (sidecarsetadmission.Cluster, error) {
	list := &kruiseappsv1alpha1.SidecarSetList{}
	if err := a.reader.List(ctx, list); err != nil {
		return sidecarsetadmission.Cluster{}, fmt.Errorf("listing SidecarSets: %w", err)
	}
	labels, err := a.namespaceLabels(ctx, set, list.Items)
	if err != nil {
		return sidecarsetadmission.Cluster{}, err
	}
	whitelist, err := a.whitelist(ctx, set)
	if err != nil {
		return sidecarsetadmission.Cluster{}, err
	}
	return sidecarsetadmission.Cluster{SidecarSets: list.Items, NamespaceLabels: labels, Whitelist: whitelist}, nil
}

// namespaceLabels reads the namespaces named by spec.namespace that a namespaceSelector is compared with;
// a missing namespace is left out.
func (a *setAdmission) namespaceLabels(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet,
	others []kruiseappsv1alpha1.SidecarSet) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, name := range namesToRead(set, others) {
		ns := &corev1.Namespace{}
		err := a.reader.Get(ctx, client.ObjectKey{Name: name}, ns)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", name, err)
		}
		out[name] = ns.Labels
	}
	return out, nil
}

// namesToRead are the namespaces of others when set has a namespaceSelector, and set's namespace when
// others have one.
func namesToRead(set *kruiseappsv1alpha1.SidecarSet, others []kruiseappsv1alpha1.SidecarSet) []string {
	seen := map[string]bool{}
	var names []string
	add := func(ns string) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			names = append(names, ns)
		}
	}
	for _, o := range others {
		if set.Spec.NamespaceSelector != nil {
			add(o.Spec.Namespace)
		}
		if o.Spec.NamespaceSelector != nil {
			add(set.Spec.Namespace)
		}
	}
	return names
}

// whitelist reads the patchPodMetadata whitelist when the SidecarSet patches pod metadata; no ConfigMap
// or key reads as none.
func (a *setAdmission) whitelist(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) (string, error) {
	if len(set.Spec.PatchPodMetadata) == 0 || a.opts.ConfigurationNamespace == "" {
		return "", nil
	}
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: a.opts.ConfigurationNamespace, Name: sidecarsetadmission.WhitelistConfigMap}
	err := a.reader.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	return cm.Data[sidecarsetadmission.WhitelistKey], nil
}
