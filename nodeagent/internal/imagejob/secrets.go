package imagejob

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// syncSecrets keeps a copy of each of the job's pull secrets in the config namespace, where the node agents
// read them (upstream copies them so that the agents need no access to users' namespaces), naming the job
// among the copy's references, and returns the copies for the NodeImages to name. A secret that does not exist
// is left out: the pull then fails on the node with the registry's answer. A job in the config namespace names
// its secrets themselves, as upstream's does.
func (r *PullJobReconciler) syncSecrets(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) ([]kruiseappsv1alpha1.ReferenceObject, error) {
	refs := make([]kruiseappsv1alpha1.ReferenceObject, 0, len(job.Spec.PullSecrets))
	for _, name := range job.Spec.PullSecrets {
		if job.Namespace == r.ConfigNamespace {
			refs = append(refs, kruiseappsv1alpha1.ReferenceObject{Namespace: job.Namespace, Name: name})
			continue
		}
		ref, ok, err := r.syncSecret(ctx, job, name)
		if err != nil {
			r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "FailedSyncSecret", "Copy "+name, "Copying pull secret %s for the node agents: %v", name, err)
			return nil, err
		}
		if ok {
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

func (r *PullJobReconciler) syncSecret(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, name string) (kruiseappsv1alpha1.ReferenceObject, bool, error) {
	src := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("Pull secret not found", "secret", name)
			return kruiseappsv1alpha1.ReferenceObject{}, false, nil
		}
		return kruiseappsv1alpha1.ReferenceObject{}, false, fmt.Errorf("reading pull secret %s: %w", name, err)
	}
	cur := &corev1.Secret{}
	err := r.Secrets.Get(ctx, types.NamespacedName{Namespace: r.ConfigNamespace, Name: plan.CopyName(src.Namespace, src.Name)}, cur)
	switch {
	case apierrors.IsNotFound(err):
		cur = nil
	case err != nil:
		return kruiseappsv1alpha1.ReferenceObject{}, false, fmt.Errorf("reading the copy of pull secret %s: %w", name, err)
	}
	next, write := plan.Copy(src, cur, r.ConfigNamespace, plan.JobKey(job))
	if write {
		if err := r.writeCopy(ctx, next, cur == nil); err != nil {
			return kruiseappsv1alpha1.ReferenceObject{}, false, err
		}
	}
	return kruiseappsv1alpha1.ReferenceObject{Namespace: next.Namespace, Name: next.Name}, true, nil
}

func (r *PullJobReconciler) writeCopy(ctx context.Context, s *corev1.Secret, create bool) error {
	var err error
	op := opUpdate
	if create {
		op = opCreate
		err = r.Client.Create(ctx, s)
	} else {
		err = r.Client.Update(ctx, s)
	}
	countSecretOperation(op, err)
	if err != nil {
		return fmt.Errorf("writing pull secret copy %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// releaseSecrets takes the job out of the references of the copies it used, and deletes the copies no job
// uses any more. Only a job holding the deletion-protection finalizer can have copies.
func (r *PullJobReconciler) releaseSecrets(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) error {
	if !slices.Contains(job.Finalizers, kruiseappsv1alpha1.DeletionProtectionFinalizer) || job.Namespace == r.ConfigNamespace {
		return nil
	}
	list := &corev1.SecretList{}
	if err := r.Secrets.List(ctx, list, client.InNamespace(r.ConfigNamespace)); err != nil {
		return fmt.Errorf("listing the pull secret copies: %w", err)
	}
	for i := range list.Items {
		if s := &list.Items[i]; plan.IsCopy(s) {
			if err := r.releaseCopy(ctx, s, plan.JobKey(job)); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseCopy drops key from a copy's references, or deletes the copy when it was the last. Both writes hold
// the copy's resourceVersion: a job that took the copy up meanwhile makes them conflict, not lose it.
func (r *PullJobReconciler) releaseCopy(ctx context.Context, s *corev1.Secret, key string) error {
	next, del, write := plan.Release(s, key)
	var err error
	switch {
	case del:
		err = r.Client.Delete(ctx, s, client.Preconditions{ResourceVersion: &s.ResourceVersion})
		countSecretOperation(opDelete, client.IgnoreNotFound(err))
		err = client.IgnoreNotFound(err)
	case write:
		err = r.Client.Update(ctx, next)
		countSecretOperation(opUpdate, err)
	}
	if err != nil {
		return fmt.Errorf("releasing pull secret copy %s: %w", s.Name, err)
	}
	return nil
}
