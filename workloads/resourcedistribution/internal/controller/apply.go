package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// writeWorkers bounds the copy writes of one reconcile in flight at once.
const writeWorkers = 16

// eventNamespaces is how many namespaces an event names before it counts the rest.
const eventNamespaces = 10

// outcome is what applying a plan did: the namespaces each operation succeeded and failed in, the failures
// for the status, the errors to retry on, and whether a write met a stale read.
type outcome struct {
	mu             sync.Mutex
	failures       []plan.Failure
	errs           []error
	stale          bool
	done, failed   map[string][]string
	firstFailure   map[string]error
	kind, resource string
}

func (o *outcome) err() error { return errors.Join(o.errs...) }

// opFailure is the condition each operation's failures go under.
var opFailure = map[string]kruiseappsv1alpha1.ResourceDistributionConditionType{
	opCreate: kruiseappsv1alpha1.ResourceDistributionCreateResourceFailed,
	opUpdate: kruiseappsv1alpha1.ResourceDistributionUpdateResourceFailed,
	opDelete: kruiseappsv1alpha1.ResourceDistributionDeleteResourceFailed,
}

// apply carries out the plan's creates, updates and deletes of copies of res, each namespace's independent
// of the others'.
func (r *Reconciler) apply(ctx context.Context, rd *kruiseappsv1alpha1.ResourceDistribution, res *plan.Resource, p plan.Plan) *outcome {
	out := &outcome{done: map[string][]string{}, failed: map[string][]string{}, firstFailure: map[string]error{},
		kind: res.Kind, resource: res.Name()}
	r.each(p.Create, out, opCreate, func(obj client.Object) error { return r.Client.Create(ctx, obj) })
	r.each(p.Update, out, opUpdate, func(obj client.Object) error { return r.Client.Update(ctx, obj) })
	r.each(p.Delete, out, opDelete, func(obj client.Object) error {
		uid := obj.GetUID()
		return r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	})
	r.record(rd, out)
	return out
}

func (r *Reconciler) each(objs []client.Object, out *outcome, op string, write func(client.Object) error) {
	_ = parallel.Each(objs, writeWorkers, func(obj client.Object) error {
		out.add(op, obj.GetNamespace(), write(obj))
		return nil
	})
}

// add records the result of one write. A create that finds the copy there, or an update that finds it
// changed or gone, acted on a stale read: the reconcile starts over. A copy already gone needs no delete.
func (o *outcome) add(op, ns string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		countOperation(op, nil)
		o.done[op] = append(o.done[op], ns)
	case op == opDelete && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)):
	case (op == opCreate && apierrors.IsAlreadyExists(err)) || (op == opUpdate && (apierrors.IsConflict(err) || apierrors.IsNotFound(err))):
		o.stale = true
	case op == opCreate && (apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)):
		// The namespace went, or began to go, since the cache showed it.
		o.failures = append(o.failures, plan.Failure{Namespace: ns, Type: kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, Reason: plan.NotExistsReason})
	default:
		countOperation(op, err)
		o.failures = append(o.failures, plan.Failure{Namespace: ns, Type: opFailure[op], Reason: err.Error()})
		o.errs = append(o.errs, fmt.Errorf("%s the copy in namespace %s: %w", op, ns, err))
		o.failed[op] = append(o.failed[op], ns)
		if o.firstFailure[op] == nil {
			o.firstFailure[op] = err
		}
	}
}

// record records one event per operation that succeeded somewhere and one per operation that failed
// somewhere, naming the namespaces: a distribution to a thousand namespaces costs a few events, not
// thousands.
func (r *Reconciler) record(rd *kruiseappsv1alpha1.ResourceDistribution, out *outcome) {
	for _, op := range []string{opCreate, opUpdate, opDelete} {
		verb := strings.TrimSuffix(op, "e") + "ed"
		action := strings.ToUpper(op[:1]) + op[1:]
		if nss := out.done[op]; len(nss) > 0 {
			r.Recorder.Eventf(rd, nil, corev1.EventTypeNormal, "Successful"+action, action, "%s %s %s in namespaces %s",
				strings.ToUpper(verb[:1])+verb[1:], out.kind, out.resource, namespaceNote(nss))
		}
		if nss := out.failed[op]; len(nss) > 0 {
			r.Recorder.Eventf(rd, nil, corev1.EventTypeWarning, "Failed"+action, action, "Failed to %s %s %s in namespaces %s: %v",
				op, out.kind, out.resource, namespaceNote(nss), out.firstFailure[op])
		}
	}
}

// namespaceNote names the namespaces, sorted, the first eventNamespaces of them and how many more.
func namespaceNote(nss []string) string {
	nss = slices.Sorted(slices.Values(nss))
	if len(nss) <= eventNamespaces {
		return fmt.Sprint(nss)
	}
	return fmt.Sprintf("%v and %d more", nss[:eventNamespaces], len(nss)-eventNamespaces)
}

// writeStatus patches the distribution's status when it changed. The patch holds the distribution's
// resourceVersion: a status computed from a stale copy of it conflicts instead of undoing a newer one.
func (r *Reconciler) writeStatus(ctx context.Context, rd *kruiseappsv1alpha1.ResourceDistribution, next kruiseappsv1alpha1.ResourceDistributionStatus) error {
	if equality.Semantic.DeepEqual(&rd.Status, &next) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, rd, rd.Status, next)
}
