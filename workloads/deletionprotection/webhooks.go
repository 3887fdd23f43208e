package deletionprotection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
)

// Paths of the deletion protection webhooks. The kinds upstream checks in webhooks of their own keep
// upstream's paths; upstream checks the deletion of CloneSets, Advanced StatefulSets and UnitedDeployments in
// their validating webhooks, which here belong to other modules (or none yet), so those three share one path
// of this module's.
const (
	ValidateNamespacePath      = "/validate-namespace"
	ValidateServicePath        = "/validate-service"
	ValidateIngressPath        = "/validate-ingress"
	ValidateCRDPath            = "/validate-customresourcedefinition"
	ValidateDeploymentPath     = "/validate-apps-deployment"
	ValidateReplicaSetPath     = "/validate-apps-replicaset"
	ValidateStatefulSetPath    = "/validate-apps-statefulset"
	ValidateKruiseWorkloadPath = "/validate-apps-kruise-io-workload-deletion"
	// ValidateLabelPath refuses a label value that protects nothing; upstream has no such webhook.
	ValidateLabelPath = "/validate-delete-protection-label"
)

// DeletionPaths are the paths that judge deletions.
var DeletionPaths = []string{ValidateNamespacePath, ValidateServicePath, ValidateIngressPath, ValidateCRDPath,
	ValidateDeploymentPath, ValidateReplicaSetPath, ValidateStatefulSetPath, ValidateKruiseWorkloadPath}

// RegisterWebhooks serves the deletion protection webhooks on srv. counter counts what a Cascading namespace or
// CustomResourceDefinition protects; opts are the module's gates (with the main gate off every webhook allows
// everything, as upstream's). Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, counter Counter, opts dpadmission.Options) error {
	if srv == nil || counter == nil {
		return errors.New("registering the deletion protection webhooks: server and counter are required")
	}
	webhooks.Serve(srv, handlers(counter, opts))
	return nil
}

func handlers(counter Counter, opts dpadmission.Options) map[string]admission.Handler {
	d := &deletions{counter: counter, opts: opts}
	out := map[string]admission.Handler{}
	for _, path := range DeletionPaths {
		out[path] = admission.HandlerFunc(d.handle)
	}
	l := &labelRule{opts: opts}
	out[ValidateLabelPath] = webhooks.CreatesAndUpdates(l.handle)
	return out
}

// deletions judges deletions of every protected kind.
type deletions struct {
	counter Counter
	opts    dpadmission.Options
}

func (d *deletions) handle(ctx context.Context, req admission.Request) admission.Response {
	if !d.opts.Enabled || req.Operation != admissionv1.Delete || req.SubResource != "" || len(req.OldObject.Raw) == 0 {
		return admission.Allowed("")
	}
	t, err := target(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	found, err := d.dependents(ctx, t)
	if err != nil {
		refused(ctx, t, dpadmission.Unchecked(t, err))
		return admission.Errored(http.StatusInternalServerError, dpadmission.Unchecked(t, err))
	}
	if refusal := dpadmission.Decide(t, d.opts, found); refusal != nil {
		refused(ctx, t, refusal)
		return admission.Errored(http.StatusForbidden, refusal)
	}
	return admission.Allowed("")
}

// dependents counts what Decide needs for t, and nothing else.
func (d *deletions) dependents(ctx context.Context, t dpadmission.Target) (dpadmission.Dependents, error) {
	var found dpadmission.Dependents
	var err, claimsErr error
	switch dpadmission.Needs(t, d.opts) {
	case dpadmission.NeedPodsAndClaims:
		found.ActivePods, err = d.counter.ActivePods(ctx, t.Name)
		found.BoundClaims, claimsErr = d.counter.BoundClaims(ctx, t.Name)
	case dpadmission.NeedCustomResources:
		if t.CustomResources.Version != "" { // no served version: nothing can be listed, or created
			found.CustomResources, err = d.counter.CustomResources(ctx, t.CustomResources)
		}
	case dpadmission.NeedNothing:
	}
	return found, errors.Join(err, claimsErr)
}

// refused counts and logs a refusal; the webhook's logger already names the object, resource and user.
func refused(ctx context.Context, t dpadmission.Target, reason error) {
	refusals.WithLabelValues(t.Kind, t.Labels[kruisepolicyv1alpha1.DeletionProtectionKey]).Inc()
	logf.FromContext(ctx).Info("Refused a deletion", "reason", reason.Error())
}

// stored is what a decision reads of the stored object, whatever its kind: a workload's spec.replicas.
type stored struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32 `json:"replicas"`
	} `json:"spec"`
}

// target reads the stored object of a deletion request.
func target(req admission.Request) (dpadmission.Target, error) {
	var obj stored
	if err := json.Unmarshal(req.OldObject.Raw, &obj); err != nil {
		return dpadmission.Target{}, fmt.Errorf("decoding the stored %s: %w", req.Kind.Kind, err)
	}
	t := dpadmission.Target{Group: req.Kind.Group, Kind: req.Kind.Kind, Namespace: obj.Namespace, Name: obj.Name,
		Labels: obj.Labels, Deleting: obj.DeletionTimestamp != nil, Replicas: obj.Spec.Replicas}
	if t.Group != apiextensionsv1.GroupName || t.Kind != "CustomResourceDefinition" {
		return t, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(req.OldObject.Raw, crd); err != nil {
		return dpadmission.Target{}, fmt.Errorf("decoding the stored CustomResourceDefinition: %w", err)
	}
	t.CustomResources = schema.GroupVersionResource{Group: crd.Spec.Group, Version: listVersion(crd.Spec.Versions),
		Resource: crd.Spec.Names.Plural}
	return t, nil
}

// listVersion is the version a CRD's objects are listed in: the storage version if it is served (upstream's
// choice), else the first served one; "" when none is served.
func listVersion(versions []apiextensionsv1.CustomResourceDefinitionVersion) string {
	first := ""
	for _, v := range versions {
		if v.Served && v.Storage {
			return v.Name
		}
		if v.Served && first == "" {
			first = v.Name
		}
	}
	return first
}

// labelRule refuses setting the label to a value that protects nothing (dpadmission.ValidateLabel).
type labelRule struct {
	opts dpadmission.Options
}

func (l *labelRule) handle(_ context.Context, req admission.Request) admission.Response {
	if !l.opts.Enabled {
		return admission.Allowed("")
	}
	cur, old, err := labels(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := dpadmission.ValidateLabel(req.Kind.Group, req.Kind.Kind, cur, old); len(errs) > 0 {
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// labels reads the labels of the request's object and, on update, of the stored one.
func labels(req admission.Request) (cur, old map[string]string, err error) {
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return nil, nil, fmt.Errorf("decoding the %s: %w", req.Kind.Kind, err)
	}
	if req.Operation != admissionv1.Update {
		return obj.Labels, nil, nil
	}
	var stored metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.OldObject.Raw, &stored); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored %s: %w", req.Kind.Kind, err)
	}
	return obj.Labels, stored.Labels, nil
}
