package main

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// cloneSetAt is a CloneSet of 5 replicas at generation 2 with the given strategy and status.
func cloneSetAt(t *testing.T, us kruiseappsv1alpha1.CloneSetUpdateStrategy, st kruiseappsv1alpha1.CloneSetStatus) *unstructured.Unstructured {
	return testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Generation = 2
		cs.Spec.UpdateStrategy = us
		cs.Status = st
	})
}

func advancedStatefulSetAt(t *testing.T, ru *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy, st kruiseappsv1beta1.StatefulSetStatus) *unstructured.Unstructured {
	obj := testAdvancedStatefulSet(t, false)
	var s kruiseappsv1beta1.StatefulSet
	fromUnstructuredT(t, obj, &s)
	s.Generation, s.Spec.UpdateStrategy.RollingUpdate, s.Status = 2, ru, st
	return toUnstructured(t, &s)
}

func fromUnstructuredT(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := fromUnstructured(obj, into); err != nil {
		t.Fatal(err)
	}
}

func TestWorkloadStatus(t *testing.T) {
	inPlace := kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	done := kruiseappsv1alpha1.CloneSetStatus{ObservedGeneration: 2, ReadyReplicas: 5, UpdatedReplicas: 5, AvailableReplicas: 5, UpdateRevision: "web-2"}
	notReady := done
	notReady.ReadyReplicas = 3
	partlyUpdated := done
	partlyUpdated.UpdatedReplicas = 2
	stale := done
	stale.ObservedGeneration = 1
	tests := []struct {
		name string
		kind *workloadKind
		obj  *unstructured.Unstructured
		want workloadProgress
	}{
		{"cloneset not observed", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{}, stale),
			progressing("Waiting for CloneSet spec update to be observed...")},
		{"cloneset recreate waits for ready pods", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{}, notReady),
			progressing("Waiting for 2 pods to be ready...")},
		{"cloneset in place does not wait for ready pods", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: inPlace}, notReady),
			completed("CloneSet rolling update complete 5 pods at revision web-2...")},
		{"cloneset pods not updated", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: inPlace}, partlyUpdated),
			progressing("Waiting for CloneSet rolling update to complete 2 pods at revision web-2...")},
		{"cloneset partition of 40% rounds up to 2", kindCloneSet,
			cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Partition: ptr.To(intstr.FromString("40%"))}, partlyUpdated),
			progressing("Waiting for partitioned roll out to finish: 2 out of 3 new pods have been updated...")},
		{"cloneset partition reached", kindCloneSet,
			cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Partition: ptr.To(intstr.FromInt32(3))}, partlyUpdated),
			completed("partitioned roll out complete: 2 new pods have been updated...")},
		{"cloneset paused", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Paused: true}, partlyUpdated),
			workloadProgress{outcomePaused, "Waiting for CloneSet rolling update to complete 2 pods at revision web-2... (the update is paused)"}},
		{"cloneset paused but done", kindCloneSet, cloneSetAt(t, kruiseappsv1alpha1.CloneSetUpdateStrategy{Paused: true}, done),
			completed("CloneSet rolling update complete 5 pods at revision web-2...")},
		{"asts partition", kindAdvancedStatefulSet, advancedStatefulSetAt(t,
			&kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)},
			kruiseappsv1beta1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 3, UpdatedReplicas: 1, UpdateRevision: "web-2", CurrentRevision: "web-1"}),
			progressing("Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...")},
		{"asts in place", kindAdvancedStatefulSet, advancedStatefulSetAt(t,
			&kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType},
			kruiseappsv1beta1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 1, UpdatedReplicas: 3, AvailableReplicas: 1, UpdateRevision: "web-2", CurrentRevision: "web-2"}),
			completed("statefulset rolling update complete 1 pods at revision web-2...")},
		{"asts paused", kindAdvancedStatefulSet, advancedStatefulSetAt(t,
			&kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Paused: true},
			kruiseappsv1beta1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 1}),
			workloadProgress{outcomePaused, "Waiting for 2 pods to be ready... (the update is paused)"}},
		{"deployment updating", kindDeployment, testDeployment(t, func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}
		}), progressing(`Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...`)},
		{"deployment past its deadline", kindDeployment, testDeployment(t, func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded"}}
		}), workloadProgress{outcomeFailed, `deployment "web" exceeded its progress deadline`}},
		{"deployment done", kindDeployment, testDeployment(t, func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}
		}), completed(`deployment "web" successfully rolled out`)},
		{"statefulset not observed", kindStatefulSet, testStatefulSet(t), progressing("Waiting for statefulset spec update to be observed...")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := workloadStatus(tt.kind, tt.obj)
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestWorkloadStatusRefuses(t *testing.T) {
	onDelete := testAdvancedStatefulSet(t, true)
	if err := unstructured.SetNestedField(onDelete.Object, "OnDelete", "spec", "updateStrategy", "type"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kind *workloadKind
		obj  *unstructured.Unstructured
		want string
	}{
		{"advanced daemonset", kindAdvancedDaemonSet, testAdvancedDaemonSet(t, nil), "no status viewer has been implemented for daemonsets.apps.kruise.io"},
		{"on delete", kindAdvancedStatefulSet, onDelete, "rollout status is only available for RollingUpdate strategy type"},
		{"bad partition", kindCloneSet, testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("half"))
		}), `spec.updateStrategy.partition: invalid value for IntOrString: invalid type: string is not a percentage`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := workloadStatus(tt.kind, tt.obj); err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
}
