package controller

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/plan"
)

// GeneratorName names the generating controllers (with the kind's suffix), their logs and their events.
const GeneratorName = "persistentpodstate-generator"

// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates,verbs=create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Generator keeps the PersistentPodState that a StatefulSet's kruise.io/auto-generate-persistent-pod-state
// annotations ask for: created, its spec kept, deleted when they no longer ask (plan.Generated). It only
// ever changes a PersistentPodState the StatefulSet controls; one of the same name that it does not control
// is left alone and reported.
type Generator struct {
	// Client reads StatefulSets and PersistentPodStates from the manager's cache and writes; Recorder records
	// events on the StatefulSet. Both default to the manager's.
	Client   client.Client
	Recorder events.EventRecorder
	// Advanced: the Advanced StatefulSets (apps.kruise.io); else the native ones.
	Advanced bool
}

// SetupWithManager runs the Generator on a StatefulSet's creation and on changes of its annotations, and on
// a change or deletion of the PersistentPodState it controls.
func (g *Generator) SetupWithManager(mgr ctrl.Manager) error {
	name := GeneratorName + "-statefulset"
	var obj client.Object = &appsv1.StatefulSet{}
	if g.Advanced {
		name, obj = GeneratorName+"-advanced-statefulset", &kruiseappsv1beta1.StatefulSet{}
	}
	if g.Client == nil {
		g.Client = mgr.GetClient()
	}
	if g.Recorder == nil {
		g.Recorder = mgr.GetEventRecorder(GeneratorName)
	}
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(obj, builder.WithPredicates(askingAnnotationsChanged())).
		Owns(&kruiseappsv1alpha1.PersistentPodState{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(g)
}

// Reconcile makes the StatefulSet's generated PersistentPodState what its annotations ask for.
func (g *Generator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set, owner, err := g.statefulSet(ctx, req.NamespacedName)
	if err != nil || set == nil || set.GetDeletionTimestamp() != nil {
		// A deleted StatefulSet's PersistentPodState goes with it: the garbage collector follows the owner.
		return ctrl.Result{}, err
	}
	want, action := plan.Generated(owner, set.GetNamespace(), set.GetAnnotations())
	cur := &kruiseappsv1alpha1.PersistentPodState{}
	if err := g.Client.Get(ctx, req.NamespacedName, cur); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		cur = nil
	}
	switch action {
	case plan.Apply:
		return g.apply(ctx, set, cur, want)
	case plan.Delete:
		return ctrl.Result{}, g.remove(ctx, set, cur)
	case plan.Leave:
	}
	return ctrl.Result{}, nil
}

// statefulSet reads the StatefulSet of the Generator's kind, and the owner reference to it.
func (g *Generator) statefulSet(ctx context.Context, key client.ObjectKey) (client.Object, metav1.OwnerReference, error) {
	var set client.Object = &appsv1.StatefulSet{}
	apiVersion := appsv1.SchemeGroupVersion.String()
	if g.Advanced {
		set, apiVersion = &kruiseappsv1beta1.StatefulSet{}, kruiseappsv1beta1.GroupVersion.String()
	}
	if err := g.Client.Get(ctx, key, set); err != nil {
		return nil, metav1.OwnerReference{}, client.IgnoreNotFound(err)
	}
	return set, metav1.OwnerReference{APIVersion: apiVersion, Kind: "StatefulSet", Name: set.GetName(), UID: set.GetUID()}, nil
}

func (g *Generator) apply(ctx context.Context, set client.Object, cur, want *kruiseappsv1alpha1.PersistentPodState) (ctrl.Result, error) {
	switch {
	case cur == nil:
		return g.create(ctx, set, want)
	case !metav1.IsControlledBy(cur, set):
		g.Recorder.Eventf(set, cur, corev1.EventTypeWarning, "GenerateSkipped", "Generate",
			"PersistentPodState %s exists and is not this StatefulSet's: it is left as it is", cur.Name)
		return ctrl.Result{}, nil
	case equality.Semantic.DeepEqual(cur.Spec, want.Spec):
		return ctrl.Result{}, nil
	}
	cur.Spec = want.Spec
	if err := g.Client.Update(ctx, cur); err != nil {
		return ctrl.Result{}, g.refused(set, "Update", err)
	}
	g.Recorder.Eventf(set, cur, corev1.EventTypeNormal, "SuccessfulUpdate", "Update", "Updated PersistentPodState %s", cur.Name)
	return ctrl.Result{}, nil
}

func (g *Generator) create(ctx context.Context, set client.Object, want *kruiseappsv1alpha1.PersistentPodState) (ctrl.Result, error) {
	err := g.Client.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, g.refused(set, "Create", err)
	}
	g.Recorder.Eventf(set, want, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created PersistentPodState %s", want.Name)
	return ctrl.Result{}, nil
}

// refused reports a write (action Create or Update) the API server refused; one its webhook finds invalid
// (another PersistentPodState keeps the StatefulSet, say) waits for a change instead of being retried.
func (g *Generator) refused(set client.Object, action string, err error) error {
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("%s the PersistentPodState of StatefulSet %s: %w", strings.ToLower(action), set.GetName(), err)
	}
	g.Recorder.Eventf(set, nil, corev1.EventTypeWarning, "Failed"+action, action, "Failed to %s the PersistentPodState: %v",
		strings.ToLower(action), err)
	return reconcile.TerminalError(err)
}

// remove deletes the generated PersistentPodState the annotations no longer ask for; one the StatefulSet does
// not control is not its to delete.
func (g *Generator) remove(ctx context.Context, set client.Object, cur *kruiseappsv1alpha1.PersistentPodState) error {
	if cur == nil || cur.DeletionTimestamp != nil || !metav1.IsControlledBy(cur, set) {
		return nil
	}
	if err := g.Client.Delete(ctx, cur); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the PersistentPodState of StatefulSet %s: %w", set.GetName(), err)
	}
	g.Recorder.Eventf(set, cur, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted PersistentPodState %s", cur.Name)
	return nil
}

// askingAnnotationsChanged passes StatefulSet creations (at start, every StatefulSet once) and updates that
// change what the annotations ask for.
func askingAnnotationsChanged() predicate.Funcs {
	keys := []string{kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState, kruiseappsv1alpha1.AnnotationRequiredPersistentTopology,
		kruiseappsv1alpha1.AnnotationPreferredPersistentTopology, kruiseappsv1alpha1.AnnotationPersistentPodAnnotations}
	return predicate.Funcs{
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			for _, k := range keys {
				if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
					return true
				}
			}
			return false
		},
	}
}
