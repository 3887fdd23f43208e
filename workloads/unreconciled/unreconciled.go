// Package unreconciled warns about the objects of kinds this installation serves but runs no controller for:
// the API server accepts them, and without a word they would look as if something acted on them.
package unreconciled

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reason is the reason of the Warning event each such object gets.
const Reason = "NoController"

// +kubebuilder:rbac:groups=apps.kruise.io,resources=advancedcronjobs;broadcastjobs;clonesets;containerrecreaterequests;daemonsets;ephemeraljobs;imagelistpulljobs;imagepulljobs;nodeimages;nodepodprobes;persistentpodstates;podprobemarkers;resourcedistributions;sidecarsets;statefulsets;uniteddeployments;workloadspreads,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=rolloutanalyses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Kinds are the kinds of groups whose objects the scheme knows, each in its version the API server prefers,
// less those a running module reconciles and those the API server does not serve.
func Kinds(scheme *runtime.Scheme, mapper meta.RESTMapper, groups []string, reconciled []schema.GroupKind) []schema.GroupVersionKind {
	seen := map[schema.GroupKind]bool{}
	var out []schema.GroupVersionKind
	for gvk := range scheme.AllKnownTypes() {
		gk := gvk.GroupKind()
		if seen[gk] || !slices.Contains(groups, gk.Group) || strings.HasSuffix(gk.Kind, "List") || slices.Contains(reconciled, gk) {
			continue
		}
		seen[gk] = true
		if m, err := mapper.RESTMapping(gk); err == nil {
			out = append(out, m.GroupVersionKind)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// SetupWithManager starts one controller per kind that records, for each object it sees first (at creation,
// or when the manager starts), a Warning event naming the kind that nothing acts on.
func SetupWithManager(mgr ctrl.Manager, kinds []schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		w := &warner{gvk: gvk, reader: mgr.GetClient(), recorder: mgr.GetEventRecorder("flotilla-manager")}
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		err := ctrl.NewControllerManagedBy(mgr).
			Named("unreconciled-"+strings.ToLower(gvk.Kind)+"-"+strings.ReplaceAll(gvk.Group, ".", "-")).
			For(obj, builder.OnlyMetadata, builder.WithPredicates(firstSight)).
			Complete(w)
		if err != nil {
			return fmt.Errorf("watching %s: %w", gvk.GroupKind(), err)
		}
	}
	return nil
}

// firstSight passes the creation events only: a new object, or each object the informer lists at start.
var firstSight = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// warner records the event for one kind.
type warner struct {
	gvk      schema.GroupVersionKind
	reader   client.Reader
	recorder events.EventRecorder
}

// Reconcile implements reconcile.Reconciler.
func (w *warner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(w.gvk)
	if err := w.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The event's object reference is built from it: a metadata read may carry PartialObjectMetadata's own.
	obj.SetGroupVersionKind(w.gvk)
	w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, Reason, "Admit",
		"no controller for %s/%s in this installation: the object is accepted and nothing acts on it", w.gvk.Group, w.gvk.Kind)
	return reconcile.Result{}, nil
}
