package control

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statefulSetLike is the partition-style control of native StatefulSets, Advanced StatefulSets (v1beta1 and
// v1alpha1) and StatefulSet-like custom resources. It works on unstructured objects so one control serves
// every kind that has spec.replicas, spec.updateStrategy.rollingUpdate.partition and the StatefulSet status.
type statefulSetLike struct {
	c client.Client
	t Target
}

// NewStatefulSetLike returns the partition-style control of a StatefulSet-like workload.
func NewStatefulSetLike(c client.Client, t Target) WorkloadControl {
	return &statefulSetLike{c: c, t: t}
}

func (s *statefulSetLike) get(ctx context.Context) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(s.t.Ref.APIVersion)
	obj.SetKind(s.t.Ref.Kind)
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.t.Namespace, Name: s.t.Ref.Name}, obj); err != nil {
		return nil, wrapGet(err, s.t.Ref.Kind, s.t.Namespace, s.t.Ref.Name)
	}
	return obj, nil
}

// Read implements WorkloadControl.
func (s *statefulSetLike) Read(ctx context.Context) (*WorkloadInfo, error) {
	obj, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	st, err := readStatefulSetState(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", s.t.Ref.Kind, s.t.Namespace, s.t.Ref.Name, err)
	}
	info := statefulSetInfo(obj, st, s.t)
	if st.updatedReadyReplicas == nil {
		// Native StatefulSets have no updatedReadyReplicas: count the ready pods of the update revision.
		pods, err := listActivePods(ctx, s.c, s.t.Namespace, info.UpdatedPods)
		if err != nil {
			return nil, err
		}
		info.UpdatedReadyReplicas = countReady(pods)
	}
	return info, nil
}

// Initialize implements WorkloadControl.
func (s *statefulSetLike) Initialize(ctx context.Context) error {
	obj, err := s.get(ctx)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, s.c, obj, statefulSetInitPatch(obj, s.t))
}

// UpgradeBatch implements WorkloadControl.
func (s *statefulSetLike) UpgradeBatch(ctx context.Context, batch Batch) error {
	obj, err := s.get(ctx)
	if err != nil {
		return err
	}
	if patch := statefulSetBatchPatch(obj, batch); len(patch) > 0 || !batch.Abort {
		return applyMergePatch(ctx, s.c, obj, patch)
	}
	return s.backOut(ctx, obj)
}

// backOut takes an aborted release's updated pods away once the workload's controller has seen the frozen
// partition: every ordinal is then below it, so each evicted pod comes back on the current revision.
func (s *statefulSetLike) backOut(ctx context.Context, obj *unstructured.Unstructured) error {
	st, err := readStatefulSetState(obj)
	if err != nil {
		return err
	}
	info := statefulSetInfo(obj, st, s.t)
	if !info.Consistent || st.updateRevision == st.currentRevision {
		return nil
	}
	sel, err := workloadSelector(st.selector)
	if err != nil {
		return err
	}
	return backOut(ctx, s.c, backOutTarget{Owner: obj, Replicas: st.replicas, Pods: sel, Updated: info.UpdatedPods})
}

// Finalize implements WorkloadControl.
func (s *statefulSetLike) Finalize(ctx context.Context) (bool, error) {
	obj, err := s.get(ctx)
	if err != nil {
		return finalizeGone(err)
	}
	if patch := statefulSetFinalizePatch(obj, s.t); len(patch) > 0 {
		if err := applyMergePatch(ctx, s.c, obj, patch); err != nil {
			return false, err
		}
		// The status read with obj predates the patch: judge WaitResume on the next call.
		return !waitsForResume(s.t), nil
	}
	if !waitsForResume(s.t) {
		return true, nil
	}
	st, err := readStatefulSetState(obj)
	if err != nil {
		return false, err
	}
	return statefulSetResumed(st), nil
}
