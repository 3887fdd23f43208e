package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

const (
	// statefulSetReplicas is the size of the Advanced StatefulSet scenarios (issue 20).
	statefulSetReplicas = 500
	// statefulSetNodes hold 500 pods with a fifth to spare (6 x 110 = 660).
	statefulSetNodes        = 6
	kindAdvancedStatefulSet = "AdvancedStatefulSet"
	kindStatefulSet         = "StatefulSet"
	// kindGatedStatefulSet is a native StatefulSet whose pods carry two readiness gates the harness sets True
	// in one status write per pod (see kindGatedReplicaSet): the write an Advanced StatefulSet's pods cost for
	// KruisePodReady, their one gate in statefulset-scale (InPlaceUpdateReady joins it when updated in place).
	kindGatedStatefulSet = "GatedStatefulSet"
)

var advancedStatefulSetsResource = kruiseappsv1beta1.GroupVersion.WithResource("statefulsets")

// statefulSetCounters tell where an Advanced StatefulSet run's writes and time went (see cloneSetCounters).
var statefulSetCounters = []counterSpec{
	writeConflicts,
	requestsRejected,
	{"StatefulSet reconciles", reconcileTotal, map[string]string{"controller": "statefulset-controller"}},
	{"StatefulSet reconciles requeued after a delay", reconcileTotal,
		map[string]string{"controller": "statefulset-controller", "result": "requeue_after"}},
	{"StatefulSet reconciles failed", reconcileTotal, map[string]string{"controller": "statefulset-controller", "result": "error"}},
	{"pod-readiness reconciles", reconcileTotal, map[string]string{"controller": "pod-readiness-controller"}},
}

// benchAdvancedStatefulSet is a Parallel Advanced StatefulSet of the harness's pod, changed by mutate.
func benchAdvancedStatefulSet(namespace, name string, replicas int32, mutate ...func(*kruiseappsv1beta1.StatefulSet)) *kruiseappsv1beta1.StatefulSet {
	labels := workloadLabels(namespace, name)
	s := &kruiseappsv1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1beta1.GroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To(replicas), PodManagementPolicy: appsv1.ParallelPodManagement, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// inPlaceSet updates pods in place, all at once, behind the readiness gate the webhook asks for.
func inPlaceSet(s *kruiseappsv1beta1.StatefulSet) {
	allAtOnce(s)
	s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
	s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
}

// allAtOnce lets an update take every pod at once.
func allAtOnce(s *kruiseappsv1beta1.StatefulSet) {
	s.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromString("100%"))}
}

func createAdvancedStatefulSet(ctx context.Context, dyn dynamic.Interface, s *kruiseappsv1beta1.StatefulSet) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return fmt.Errorf("encoding StatefulSet %s: %w", s.Name, err)
	}
	_, err = dyn.Resource(advancedStatefulSetsResource).Namespace(s.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Advanced StatefulSet %s: %w", s.Name, err)
	}
	return nil
}

// patchAdvancedStatefulSet sends a patch and returns the generation it made.
func patchAdvancedStatefulSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, pt types.PatchType, patch []byte) (int64, error) {
	u, err := dyn.Resource(advancedStatefulSetsResource).Namespace(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching Advanced StatefulSet %s: %w", name, err)
	}
	return u.GetGeneration(), nil
}

// setScaled reports whether the set's status shows its current spec observed and every replica Ready and
// available.
func setScaled(s *kruiseappsv1beta1.StatefulSet) bool {
	want, st := ptr.Deref(s.Spec.Replicas, 1), s.Status
	return st.ObservedGeneration == s.Generation && st.Replicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want
}

// setUpdated reports whether the set's status shows its current spec observed and every replica updated and
// Ready.
func setUpdated(s *kruiseappsv1beta1.StatefulSet) bool {
	want, st := ptr.Deref(s.Spec.Replicas, 1), s.Status
	return st.ObservedGeneration == s.Generation && st.Replicas == want && st.UpdatedReadyReplicas == want
}

// setGenerationsWhere marks the observed generation of every event of the set that satisfies done.
func setGenerationsWhere(done func(*kruiseappsv1beta1.StatefulSet) bool, m *marks) handler {
	return func(at time.Time, obj runtime.Object) {
		if s, err := decode[kruiseappsv1beta1.StatefulSet](obj); err == nil && done(s) {
			m.add(s.Status.ObservedGeneration, at)
		}
	}
}

func waitAdvancedStatefulSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, done func(*kruiseappsv1beta1.StatefulSet) bool) error {
	return waitObject(ctx, dyn.Resource(advancedStatefulSetsResource).Namespace(namespace), name, done)
}

func followAdvancedStatefulSet(ctx context.Context, dyn dynamic.Interface, namespace, name string, h handler) (*follower, error) {
	return followNamed(ctx, dyn, advancedStatefulSetsResource, namespace, name, h)
}

func deleteAdvancedStatefulSet(dyn dynamic.Interface, namespace, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return dyn.Resource(advancedStatefulSetsResource).Namespace(namespace).Delete(ctx, name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	}
}

// advancedStatefulSetTarget scales a Parallel Advanced StatefulSet in namespace.
func advancedStatefulSetTarget(dyn dynamic.Interface, namespace, name string) scaleTarget {
	return scaleTarget{
		kind: kindAdvancedStatefulSet, name: name, namespace: namespace, replicas: statefulSetReplicas, counters: statefulSetCounters,
		create: func(ctx context.Context) error {
			return createAdvancedStatefulSet(ctx, dyn, benchAdvancedStatefulSet(namespace, name, 0))
		},
		observed: func(ctx context.Context) error { return waitAdvancedStatefulSet(ctx, dyn, namespace, name, setScaled) },
		follow: func(ctx context.Context, m *marks) (*follower, error) {
			return followAdvancedStatefulSet(ctx, dyn, namespace, name, setGenerationsWhere(setScaled, m))
		},
		scale: func(ctx context.Context, n int32) (int64, error) {
			return patchAdvancedStatefulSet(ctx, dyn, namespace, name, types.MergePatchType, replicasPatch(n))
		},
		remove: deleteAdvancedStatefulSet(dyn, namespace, name),
	}
}

// nativeStatefulSetTarget scales an apps/v1 StatefulSet with the Parallel policy, the baseline.
func nativeStatefulSetTarget(kube kubernetes.Interface, namespace, name string) scaleTarget {
	sets := kube.AppsV1().StatefulSets(namespace)
	return scaleTarget{
		kind: kindStatefulSet, name: name, namespace: namespace, replicas: statefulSetReplicas, counters: statefulSetCounters,
		create: func(ctx context.Context) error {
			if _, err := sets.Create(ctx, benchStatefulSet(namespace, name), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating StatefulSet %s: %w", name, err)
			}
			return nil
		},
		observed: func(ctx context.Context) error { return waitStatefulSet(ctx, kube, namespace, name) },
		follow: func(ctx context.Context, m *marks) (*follower, error) {
			s, err := sets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("getting StatefulSet %s: %w", name, err)
			}
			return follow(ctx, s.ResourceVersion, statefulSetNamedWatch(kube, namespace, name), scaledStatefulSets(m))
		},
		scale: func(ctx context.Context, n int32) (int64, error) {
			s, err := sets.Patch(ctx, name, types.MergePatchType, replicasPatch(n), metav1.PatchOptions{})
			if err != nil {
				return 0, fmt.Errorf("scaling StatefulSet %s: %w", name, err)
			}
			return s.Generation, nil
		},
		remove: func(ctx context.Context) error {
			return sets.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		},
	}
}

// gatedStatefulSetTarget is nativeStatefulSetTarget with the harness's readiness gates on the pods, set True
// by the harness as it sees each pod.
func gatedStatefulSetTarget(env *Env, namespace, name string) scaleTarget {
	kube := env.Kube
	t := nativeStatefulSetTarget(kube, namespace, name)
	t.kind = kindGatedStatefulSet
	t.create = func(ctx context.Context) error {
		s := benchStatefulSet(namespace, name)
		for _, g := range benchGates {
			s.Spec.Template.Spec.ReadinessGates = append(s.Spec.Template.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		}
		if _, err := kube.AppsV1().StatefulSets(namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating StatefulSet %s: %w", name, err)
		}
		return nil
	}
	t.helper = func(ctx context.Context) (func() (int64, error), error) {
		return settleGates(ctx, env, namespace, name, benchGates)
	}
	return t
}

// benchStatefulSet is an apps/v1 StatefulSet of the harness's pod with the Parallel policy and no replicas.
func benchStatefulSet(namespace, name string) *appsv1.StatefulSet {
	labels := workloadLabels(namespace, name)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), PodManagementPolicy: appsv1.ParallelPodManagement, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
		},
	}
}

// statefulSetScaled is setScaled for an apps/v1 StatefulSet.
func statefulSetScaled(s *appsv1.StatefulSet) bool {
	want, st := ptr.Deref(s.Spec.Replicas, 1), s.Status
	return st.ObservedGeneration == s.Generation && st.Replicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want
}

func scaledStatefulSets(m *marks) handler {
	return func(at time.Time, obj runtime.Object) {
		if s, ok := obj.(*appsv1.StatefulSet); ok && statefulSetScaled(s) {
			m.add(s.Status.ObservedGeneration, at)
		}
	}
}

func waitStatefulSet(ctx context.Context, kube kubernetes.Interface, namespace, name string) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, clonesetRunTimeout, true, func(ctx context.Context) (bool, error) {
		s, err := kube.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && statefulSetScaled(s), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for StatefulSet %s to be observed: %w", name, err)
	}
	return nil
}

func statefulSetNamedWatch(kube kubernetes.Interface, namespace, name string) cache.WatchFuncWithContext {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return kube.AppsV1().StatefulSets(namespace).Watch(ctx, opts)
	}
}
