package controller

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// podState reads a pod's lifecycle state and first image.
func podState(ctx context.Context, c client.Client, ns, name string) (kruiseappspub.LifecycleStateType, string, error) {
	p := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		return "", "", err
	}
	return kruiseappspub.LifecycleStateType(p.Labels[kruiseappspub.LifecycleStateKey]), p.Spec.Containers[0].Image, nil
}

// setPodLabel sets (value != "") or removes a label of a pod, as a hook's operator does.
func setPodLabel(t *testing.T, c client.Client, ns, name, key, value string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	managertest.Update(t, c, p, func(p *corev1.Pod) {
		if value == "" {
			delete(p.Labels, key)
		} else {
			p.Labels[key] = value
		}
	})
}

func inState(c client.Client, ns, name string, want kruiseappspub.LifecycleStateType, image string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		state, img, err := podState(ctx, c, ns, name)
		return state == want && img == image, err
	}
}

// The inPlaceUpdate hook holds an in-place update in PreparingUpdate while the pod carries the hook's label;
// once updated, the pod waits in Updated until the label is back, then returns to Normal.
func TestInPlaceUpdateHook(t *testing.T) {
	const hook = "example.com/serving"
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 1, "nginx:1", inPlace(0), func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Lifecycle = &kruiseappspub.Lifecycle{InPlaceUpdate: &kruiseappspub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
		s.Spec.Template.Labels[hook] = "true"
	})
	create(t, c, s)
	before := uids(settled(t, c, s, 1))
	update(t, c, s, setImage("nginx:2"))
	eventually(t, "web-0 preparing its update", inState(c, ns, "web-0", kruiseappspub.LifecycleStatePreparingUpdate, "nginx:1"))
	consistently(t, "web-0 held on its image", inState(c, ns, "web-0", kruiseappspub.LifecycleStatePreparingUpdate, "nginx:1"))
	setPodLabel(t, c, ns, "web-0", hook, "")
	eventually(t, "web-0 updated, waiting for its hook", inState(c, ns, "web-0", kruiseappspub.LifecycleStateUpdated, "nginx:2"))
	consistently(t, "web-0 waiting for its hook", inState(c, ns, "web-0", kruiseappspub.LifecycleStateUpdated, "nginx:2"))
	setPodLabel(t, c, ns, "web-0", hook, "true")
	eventually(t, "web-0 Normal", inState(c, ns, "web-0", kruiseappspub.LifecycleStateNormal, "nginx:2"))
	if after := uids(settled(t, c, s, 1)); after["web-0"] != before["web-0"] {
		t.Errorf("web-0 was recreated: uid %s -> %s", before["web-0"], after["web-0"])
	}
}

// The preNormal hook keeps a new pod PreparingNormal until it carries the hook's label.
func TestPreNormalHook(t *testing.T) {
	const hook = "example.com/registered"
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1", func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreNormal: &kruiseappspub.LifecycleHook{LabelsHandler: map[string]string{hook: "true"}}}
	})
	create(t, c, s)
	for _, name := range []string{"web-0", "web-1"} {
		eventually(t, name+" PreparingNormal", inState(c, ns, name, kruiseappspub.LifecycleStatePreparingNormal, "nginx:1"))
	}
	consistently(t, "web-0 PreparingNormal", inState(c, ns, "web-0", kruiseappspub.LifecycleStatePreparingNormal, "nginx:1"))
	setPodLabel(t, c, ns, "web-0", hook, "true")
	eventually(t, "web-0 Normal", inState(c, ns, "web-0", kruiseappspub.LifecycleStateNormal, "nginx:1"))
	consistently(t, "web-1 still PreparingNormal", inState(c, ns, "web-1", kruiseappspub.LifecycleStatePreparingNormal, "nginx:1"))
}

// The scale subresource is what kubectl scale and the HorizontalPodAutoscaler use: it reads the replicas
// and the status's label selector, and writing it scales the set.
func TestScaleSubresource(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	s := newSet(ns, "web", 2, "nginx:1")
	create(t, c, s)
	settled(t, c, s, 2)
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(t.Context(), s, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale %+v", scale)
	}
	scale.Spec.Replicas = 4
	if err := c.SubResource("scale").Update(t.Context(), s, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	if got := names(settled(t, c, s, 4)); len(got) != 4 || got[3] != "web-3" {
		t.Errorf("pods %v", got)
	}
	if err := c.SubResource("scale").Get(t.Context(), s, scale); err != nil || scale.Status.Replicas != 4 {
		t.Errorf("scale %+v, %v", scale, err)
	}
}
