package persistentpodstate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	ipKey   = "example.com/ip"
)

// The seed's story of a StatefulSet whose pods keep their zone: the annotations generate the
// PersistentPodState, Ready pods are recorded, a pod created again gets its zone back through the pod
// webhook, a pod scaled away loses its record, a second PersistentPodState of the set is refused, and the
// generated one goes with the annotation. StatefulSet pods reach the pod webhook only while a
// PersistentPodState exists.
func TestPersistentPodStateThroughTheAPIServer(t *testing.T) {
	e := start(t)
	ns := managertest.NamespaceWithServiceAccount(t, e.c, "pps")
	nodeA, nodeB := e.node(t, "a", "z1"), e.node(t, "b", "z2")
	set := e.statefulSet(t, ns)

	pps := &kruiseappsv1alpha1.PersistentPodState{}
	e.eventually(t, "the generated PersistentPodState", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, pps)
		return err == nil && metav1.IsControlledBy(pps, set), err
	})
	if got := pps.Spec.RequiredPersistentTopology; got == nil || strings.Join(got.NodeTopologyKeys, ",") != zoneKey ||
		pps.Spec.TargetReference.APIVersion != "apps/v1" || len(pps.Spec.PersistentPodAnnotations) != 1 {
		t.Fatalf("generated spec %+v", pps.Spec)
	}

	e.waitRouting(t, true)
	e.markReady(t, e.pod(t, set, "web-0", nodeA))
	e.markReady(t, e.pod(t, set, "web-1", nodeB))
	e.waitRecords(t, ns, map[string]string{"web-0": nodeA + "/z1", "web-1": nodeB + "/z2"})

	t.Run("a pod created again gets its zone back", func(t *testing.T) {
		e.deletePod(t, ns, "web-0")
		var again *corev1.Pod
		// The webhook fails open: a dry run shows when the API server calls it with the manager's certificate.
		e.eventually(t, "the pod webhook injecting the recorded zone", func(ctx context.Context) (bool, error) {
			again = e.newPod(set, "web-0", "")
			err := e.c.Create(ctx, again, client.DryRunAll)
			return err == nil && again.Spec.NodeSelector[zoneKey] == "z1", fmt.Errorf("nodeSelector %v: %w", again.Spec.NodeSelector, err)
		})
		again = e.newPod(set, "web-0", "")
		managertest.Create(t, e.c, again)
		if again.Spec.NodeSelector[zoneKey] != "z1" || again.Annotations[kruiseappsv1alpha1.InjectedPersistentPodStateKey] != "web" {
			t.Fatalf("recreated pod: nodeSelector %v annotations %v", again.Spec.NodeSelector, again.Annotations)
		}
	})

	t.Run("a pod scaled away loses its record", func(t *testing.T) {
		if err := e.c.Patch(t.Context(), set, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`))); err != nil {
			t.Fatal(err)
		}
		e.deletePod(t, ns, "web-1")
		e.waitRecords(t, ns, map[string]string{"web-0": nodeA + "/z1"})
	})

	t.Run("a second PersistentPodState of the StatefulSet is refused", func(t *testing.T) {
		second := &kruiseappsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
			Spec: kruiseappsv1alpha1.PersistentPodStateSpec{
				TargetReference:            kruiseappsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"},
				RequiredPersistentTopology: &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zoneKey}}}}
		err := e.c.Create(t.Context(), second)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "targetRef is in conflict with other PersistentPodState web") {
			t.Fatalf("creating a second PersistentPodState: %v", err)
		}
	})

	t.Run("the generated PersistentPodState goes with the annotation", func(t *testing.T) {
		patch := `{"metadata":{"annotations":{"` + kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState + `":null}}}`
		if err := e.c.Patch(t.Context(), set, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
		e.eventually(t, "the PersistentPodState deleted", func(ctx context.Context) (bool, error) {
			err := e.c.Get(ctx, client.ObjectKeyFromObject(pps), &kruiseappsv1alpha1.PersistentPodState{})
			return apierrors.IsNotFound(err), err
		})
		e.waitRouting(t, false)
	})
}

// An Advanced StatefulSet's annotations generate its PersistentPodState too, targeting apps.kruise.io/v1beta1.
func TestGeneratedForAdvancedStatefulSet(t *testing.T) {
	e := start(t)
	ns := managertest.Namespace(t, e.c, "pps-advanced")
	labels := map[string]string{"app": "db"}
	set := &kruiseappsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Annotations: map[string]string{
			kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruiseappsv1alpha1.AnnotationPreferredPersistentTopology:    "kubernetes.io/hostname",
		}},
		Spec: kruiseappsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)},
	}
	managertest.Create(t, e.c, set)
	e.eventually(t, "the generated PersistentPodState", func(ctx context.Context) (bool, error) {
		pps := &kruiseappsv1alpha1.PersistentPodState{}
		err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, pps)
		ref := pps.Spec.TargetReference
		return err == nil && ref.APIVersion == "apps.kruise.io/v1beta1" && len(pps.Spec.PreferredPersistentTopology) == 1 &&
			pps.Spec.PreferredPersistentTopology[0].Weight == 100, fmt.Errorf("%+v: %w", pps.Spec, err)
	})
}

// statefulSet creates the native StatefulSet web of 2 replicas that asks for a PersistentPodState keeping the
// zone and an annotation.
func (e *env) statefulSet(t *testing.T, ns string) *appsv1.StatefulSet {
	t.Helper()
	labels := map[string]string{"app": "web"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{
			kruiseappsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
			kruiseappsv1alpha1.AnnotationRequiredPersistentTopology:     zoneKey,
			kruiseappsv1alpha1.AnnotationPersistentPodAnnotations:       ipKey,
		}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: "web",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)},
	}
	managertest.Create(t, e.c, set)
	return set
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
}

// newPod is the set's pod name as the StatefulSet controller would create it, on node when not "".
func (e *env) newPod(set *appsv1.StatefulSet, name, node string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: set.Namespace, Name: name, Labels: set.Spec.Template.Labels,
			Annotations:     map[string]string{ipKey: "10.0.0." + name[len(name)-1:]},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	return pod
}

func (e *env) pod(t *testing.T, set *appsv1.StatefulSet, name, node string) *corev1.Pod {
	t.Helper()
	pod := e.newPod(set, name, node)
	managertest.Create(t, e.c, pod)
	return pod
}

// deletePod deletes the pod at once: no kubelet confirms a graceful deletion here.
func (e *env) deletePod(t *testing.T, ns, name string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := e.c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// waitRecords waits until the PersistentPodState web records exactly the pods of want (pod: node/zone), each
// with its IP annotation.
func (e *env) waitRecords(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	e.eventually(t, fmt.Sprintf("records %v", want), func(ctx context.Context) (bool, error) {
		pps := &kruiseappsv1alpha1.PersistentPodState{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, pps); err != nil {
			return false, err
		}
		got := map[string]string{}
		for name, s := range pps.Status.PodStates {
			got[name] = s.NodeName + "/" + s.NodeTopologyLabels[zoneKey]
			if s.Annotations[ipKey] != "10.0.0."+name[len(name)-1:] {
				return false, fmt.Errorf("record of %s without its IP: %+v", name, s)
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Errorf("records %v", got)
	})
}
