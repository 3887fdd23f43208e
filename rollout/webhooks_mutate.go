package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// workloadMutator answers the workload mutating webhooks: it freezes a workload whose new revision a
// Rollout is to release.
type workloadMutator struct {
	Readers
	decoder admission.Decoder
}

func (m *workloadMutator) deployment(ctx context.Context, req admission.Request) admission.Response {
	old, cur := &appsv1.Deployment{}, &appsv1.Deployment{}
	rollout, resp, done := m.prepare(ctx, req, old, cur)
	if done {
		return resp
	}
	rss, err := m.replicaSets(ctx, old, cur)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	out, err := rolloutadmission.FreezeDeployment(old, cur, rollout, rss)
	if err != nil {
		return admission.Denied(err.Error())
	}
	return typedPatch(ctx, req, cur, out, rollout)
}

func (m *workloadMutator) cloneSet(ctx context.Context, req admission.Request) admission.Response {
	old, cur := &kruiseappsv1alpha1.CloneSet{}, &kruiseappsv1alpha1.CloneSet{}
	rollout, resp, done := m.prepare(ctx, req, old, cur)
	if done {
		return resp
	}
	return typedPatch(ctx, req, cur, rolloutadmission.FreezeCloneSet(old, cur, rollout), rollout)
}

func (m *workloadMutator) advancedDaemonSet(ctx context.Context, req admission.Request) admission.Response {
	old, cur := &kruiseappsv1alpha1.DaemonSet{}, &kruiseappsv1alpha1.DaemonSet{}
	rollout, resp, done := m.prepare(ctx, req, old, cur)
	if done {
		return resp
	}
	return typedPatch(ctx, req, cur, rolloutadmission.FreezeAdvancedDaemonSet(old, cur, rollout), rollout)
}

func (m *workloadMutator) daemonSet(ctx context.Context, req admission.Request) admission.Response {
	old, cur := &appsv1.DaemonSet{}, &appsv1.DaemonSet{}
	rollout, resp, done := m.prepare(ctx, req, old, cur)
	if done {
		return resp
	}
	return typedPatch(ctx, req, cur, rolloutadmission.FreezeNativeDaemonSet(old, cur, rollout), rollout)
}

// unifiedSkipped are the kinds whose own webhooks freeze them.
var unifiedSkipped = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                          true,
	{Group: "apps", Kind: "DaemonSet"}:                           true,
	{Group: "apps.kruise.io", Kind: "CloneSet"}:                  true,
	{Group: "apps.kruise.io", Kind: "DaemonSet"}:                 true,
	{Group: rolloutsv1beta1.GroupVersion.Group, Kind: "Rollout"}: true,
}

// unified freezes StatefulSet-like workloads of any kind, read as unstructured objects.
func (m *workloadMutator) unified(ctx context.Context, req admission.Request) admission.Response {
	if unifiedSkipped[schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}] {
		return admission.Allowed("")
	}
	old, cur := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	if err := m.decodePair(req, old, cur); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !rolloutadmission.IsStatefulSetLike(cur) {
		return admission.Allowed("")
	}
	rollout, err := m.matchingRollout(ctx, req, cur)
	if err != nil || rollout == nil {
		return allowedUnlessError(err)
	}
	out, err := rolloutadmission.FreezeStatefulSetLike(old, cur, rollout)
	if err != nil {
		return admission.Denied(err.Error())
	}
	if out == nil {
		return admission.Allowed("")
	}
	mutated, err := json.Marshal(out.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding %s: %w", req.Kind.Kind, err))
	}
	logFrozen(ctx, rollout)
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// prepare decodes the request and finds the matching Rollout. done means resp is the answer: an error, or
// no Rollout releases the workload.
func (m *workloadMutator) prepare(ctx context.Context, req admission.Request, old, cur client.Object) (*rolloutsv1beta1.Rollout, admission.Response, bool) {
	if err := m.decodePair(req, old, cur); err != nil {
		return nil, admission.Errored(http.StatusBadRequest, err), true
	}
	rollout, err := m.matchingRollout(ctx, req, cur)
	if err != nil || rollout == nil {
		return nil, allowedUnlessError(err), true
	}
	return rollout, admission.Response{}, false
}

func (m *workloadMutator) decodePair(req admission.Request, old, cur runtime.Object) error {
	if err := m.decoder.DecodeRaw(req.Object, cur); err != nil {
		return fmt.Errorf("decoding %s: %w", req.Kind.Kind, err)
	}
	if err := m.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return fmt.Errorf("decoding the stored %s: %w", req.Kind.Kind, err)
	}
	return nil
}

// matchingRollout finds the Rollout of obj in the cache, else (see Readers) from the API server. Only
// labelled workloads reach these webhooks, and a Rollout labels its workload: a miss is a Rollout the cache
// has not seen yet, or one deleted since.
func (m *workloadMutator) matchingRollout(ctx context.Context, req admission.Request, obj client.Object) (*rolloutsv1beta1.Rollout, error) {
	namespace := obj.GetNamespace()
	if namespace == "" {
		namespace = req.Namespace
	}
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	rollouts, err := rolloutsNaming(ctx, m.Cached, namespace, req.Kind.Kind, obj.GetName())
	if err != nil {
		return nil, err
	}
	if found := rolloutadmission.MatchingRollout(rollouts, namespace, gk, obj.GetName()); found != nil || m.Live == nil {
		return found, nil
	}
	live := &rolloutsv1beta1.RolloutList{}
	if err := m.Live.List(ctx, live, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Rollouts: %w", err)
	}
	found := rolloutadmission.MatchingRollout(live.Items, namespace, gk, obj.GetName())
	if found != nil {
		logf.FromContext(ctx).Info("Found the workload's Rollout through the API server: the cache had not seen it yet", "rollout", klog.KObj(found))
	}
	return found, nil
}

// replicaSets reads the ReplicaSets cur controls, the ones FreezeDeployment reads: from the cache, else (see
// Readers) from the API server when the cache shows none to hold the update for.
func (m *workloadMutator) replicaSets(ctx context.Context, old, cur *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	rss, err := control.OwnedReplicaSets(ctx, m.Cached, cur)
	if err != nil || m.Live == nil || !rolloutadmission.MissesReplicaSets(old, cur, rss) {
		return rss, err
	}
	live, err := control.OwnedReplicaSets(ctx, m.Live, cur)
	if err == nil && !rolloutadmission.MissesReplicaSets(old, cur, live) {
		logf.FromContext(ctx).Info("Found the Deployment's active ReplicaSets through the API server: the cache had not seen them yet")
	}
	return live, err
}

func allowedUnlessError(err error) admission.Response {
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Allowed("")
}

// typedPatch answers with the change from cur to out (nil: none), merged into the raw request.
func typedPatch[T any](ctx context.Context, req admission.Request, cur, out *T, rollout *rolloutsv1beta1.Rollout) admission.Response {
	if out == nil {
		return admission.Allowed("")
	}
	resp, err := webhooks.PatchResponse(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the %s patch: %w", req.Kind.Kind, err))
	}
	logFrozen(ctx, rollout)
	return resp
}

func logFrozen(ctx context.Context, rollout *rolloutsv1beta1.Rollout) {
	logf.FromContext(ctx).V(1).Info("Holding the workload for its Rollout", "rollout", klog.KObj(rollout))
}
