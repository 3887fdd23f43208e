package terminator

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/internal/terminator/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	terminate = []string{kruiseappsv1alpha1.KruiseTerminateSidecarEnv, "true"}
	ignore    = []string{kruiseappsv1alpha1.KruiseTerminateSidecarEnv, "true", kruiseappsv1alpha1.KruiseIgnoreContainerExitCodeEnv, "true"}
)

// The pods whose main containers finished get a request stopping their running sidecars, made as upstream
// makes it; the others get none. The pods that must get none come first: with one worker, once the
// later pods' requests exist the earlier pods have been handled.
func TestTerminatorStopsTheSidecarsOfFinishedJobPods(t *testing.T) {
	e := start(t)
	e.newPod(t, "main-running", corev1.RestartPolicyNever,
		container{name: "main", state: "running"}, container{name: "proxy", state: "running", env: terminate})
	e.newPod(t, "onfailure-main-failed", corev1.RestartPolicyOnFailure,
		container{name: "main", state: "exit:1"}, container{name: "proxy", state: "running", env: terminate})
	e.newPod(t, "restart-always", corev1.RestartPolicyAlways,
		container{name: "main", state: "exit:0"}, container{name: "proxy", state: "running", env: terminate})
	e.newPod(t, "no-env", corev1.RestartPolicyNever,
		container{name: "main", state: "exit:0"}, container{name: "proxy", state: "running"})

	never := e.newPod(t, "never", corev1.RestartPolicyNever,
		container{name: "main", state: "exit:1"}, container{name: "proxy", state: "running", env: terminate},
		container{name: "log", state: "running", env: terminate}, container{name: "done", state: "exit:0", env: terminate})
	onFailure := e.newPod(t, "onfailure", corev1.RestartPolicyOnFailure,
		container{name: "main", state: "exit:0"}, container{name: "proxy", state: "running", env: terminate})

	for _, tc := range []struct {
		pod        *corev1.Pod
		containers []string
	}{{never, []string{"log", "proxy"}}, {onFailure, []string{"proxy"}}} {
		got := e.request(t, tc.pod)
		want := kruiseappsv1alpha1.ContainerRecreateRequestSpec{
			PodName: tc.pod.Name,
			Strategy: &kruiseappsv1alpha1.ContainerRecreateRequestStrategy{
				ForceRecreate: true, FailurePolicy: kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore,
			},
		}
		for _, name := range tc.containers {
			want.Containers = append(want.Containers, kruiseappsv1alpha1.ContainerRecreateRequestContainer{Name: name})
		}
		if diff := cmp.Diff(want, got.Spec); diff != "" {
			t.Errorf("request of %s (-want +got):\n%s", tc.pod.Name, diff)
		}
		owner := metav1.GetControllerOf(got)
		if owner == nil || owner.Kind != "Pod" || owner.UID != tc.pod.UID || !ptr.Deref(owner.BlockOwnerDeletion, false) {
			t.Errorf("request of %s is owned by %+v, want its pod", tc.pod.Name, got.OwnerReferences)
		}
	}
	want := []string{plan.RequestName(never), plan.RequestName(onFailure)}
	if got := e.requestNames(t); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("requests %v, want only %v", got, want)
	}
}

// A sidecar that ignores its exit code: the pod's phase is set from its main container first, with
// upstream's condition, and then the sidecar is stopped.
func TestTerminatorSetsThePhaseBeforeStoppingSidecarsThatIgnoreTheirExitCode(t *testing.T) {
	e := start(t)
	pod := e.newPod(t, "ignore", corev1.RestartPolicyNever,
		container{name: "main", state: "exit:0"}, container{name: "proxy", state: "running", env: ignore})
	got := e.request(t, pod)
	if want := []kruiseappsv1alpha1.ContainerRecreateRequestContainer{{Name: "proxy"}}; !cmp.Equal(want, got.Spec.Containers) {
		t.Errorf("request stops %+v, want proxy", got.Spec.Containers)
	}
	current := &corev1.Pod{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	if current.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod phase %s, want Succeeded", current.Status.Phase)
	}
	if !slices.ContainsFunc(current.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == plan.SidecarTerminatedCondition && c.Status == corev1.ConditionTrue
	}) {
		t.Errorf("pod conditions %+v lack %s", current.Status.Conditions, plan.SidecarTerminatedCondition)
	}
}
