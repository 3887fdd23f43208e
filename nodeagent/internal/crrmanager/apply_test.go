package crrmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// A finished request whose cache does not show its hold on the pod yet still releases the pod before its
// finalizer goes: otherwise nothing would ever release it.
func TestFinishedRequestReleasesAHoldTheCacheMissed(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	crr := newCRR(completedAt(created), withFinalizer)
	stale := newPod(func(p *corev1.Pod) { podreadiness.AddGate(p); podreadiness.InitCondition(p, metav1.NewTime(created)) })
	held := stale.DeepCopy()
	podreadiness.AddNotReady(held, NotReadyUserAgent, HolderKey(crr), metav1.NewTime(created))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(crr, held).
		WithStatusSubresource(&corev1.Pod{}, &kruiseappsv1alpha1.ContainerRecreateRequest{}).Build()
	r := &Reconciler{Deps: reconcilerdeps.Deps{Client: c, Clock: clock.RealClock{}}, APIReader: c}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crr), crr); err != nil {
		t.Fatal(err)
	}
	stale.ResourceVersion = "1" // older than the held pod in the fake API

	if err := r.apply(t.Context(), crr, stale, Decide(crr, stale, created)); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(held), got); err != nil {
		t.Fatal(err)
	}
	if holds(got, crr) {
		t.Error("the pod is still held by the finished request")
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crr), crr); err != nil {
		t.Fatal(err)
	}
	if HasFinalizer(crr) {
		t.Error("the finalizer is still on the finished request")
	}
}
