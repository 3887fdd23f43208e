package podcache

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func ownedPod(apiVersion, kind string, controller bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", Controller: &controller}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "app:v1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true}},
		},
	}
}

func TestSlimmed(t *testing.T) {
	injected := ownedPod("apps/v1", "ReplicaSet", true)
	injected.Annotations = map[string]string{kruiseappsv1alpha1.SidecarSetHashAnnotation: "{}"}
	barrier := corev1.EnvVar{Name: kruiseappspub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "p-barrier"}, Key: "p_0"}}}
	launching := ownedPod("apps/v1", "ReplicaSet", true)
	launching.Spec.Containers[0].Env = []corev1.EnvVar{barrier}
	launched := launching.DeepCopy()
	launched.Annotations = map[string]string{kruiseappspub.ContainerLaunchPriorityCompletedKey: "true"}
	orphan := ownedPod("apps/v1", "ReplicaSet", true)
	orphan.OwnerReferences = nil
	withEnv := func(name, value string) *corev1.Pod {
		p := ownedPod("batch/v1", "Job", true)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Env: []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: name, Value: value}}})
		return p
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		slim bool
	}{
		"ReplicaSet's":                      {ownedPod("apps/v1", "ReplicaSet", true), true},
		"StatefulSet's":                     {ownedPod("apps/v1", "StatefulSet", true), true},
		"DaemonSet's":                       {ownedPod("apps/v1", "DaemonSet", true), true},
		"Job's":                             {ownedPod("batch/v1", "Job", true), true},
		"CloneSet's":                        {ownedPod("apps.kruise.io/v1alpha1", "CloneSet", true), false},
		"Advanced StatefulSet's":            {ownedPod("apps.kruise.io/v1beta1", "StatefulSet", true), false},
		"Advanced DaemonSet's":              {ownedPod("apps.kruise.io/v1alpha1", "DaemonSet", true), false},
		"owned but not controlled":          {ownedPod("apps/v1", "ReplicaSet", false), false},
		"orphan (may be adopted)":           {orphan, false},
		"injected by a SidecarSet":          {injected, false},
		"launching behind a barrier":        {launching, false},
		"launch completed":                  {launched, true},
		"malformed owner API version":       {ownedPod("apps/v1/x", "ReplicaSet", true), false},
		"Job's with a sidecar to terminate": {withEnv(kruiseappsv1alpha1.KruiseTerminateSidecarEnv, "true"), false},
		"Job's with an image-swap sidecar":  {withEnv(kruiseappsv1alpha1.KruiseTerminateSidecarWithImageEnv, "x:1"), false},
		"Job's with other env":              {withEnv("KRUISE_OTHER", "true"), true},
	} {
		if got := Slimmed(tc.pod); got != tc.slim {
			t.Errorf("%s: Slimmed = %v, want %v", name, got, tc.slim)
		}
	}
}

func TestTransformKeepsWhatTheManagerReads(t *testing.T) {
	strip := func(obj any) (any, error) {
		obj.(*corev1.Pod).ManagedFields = nil
		return obj, nil
	}
	in := ownedPod("apps/v1", "ReplicaSet", true)
	in.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "init:v1"}}
	debug := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox",
		Env: []corev1.EnvVar{{Name: kruiseappsv1alpha1.EphemeralContainerEnvKey, Value: "uid"}}}}
	in.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug}
	in.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	in.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", Image: "init:v1", RestartCount: 4,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}}}
	out, err := Transform(strip)(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	want := in.DeepCopy()
	want.ManagedFields = nil
	want.Spec = corev1.PodSpec{NodeName: "n1", ReadinessGates: in.Spec.ReadinessGates,
		InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "c", Ports: in.Spec.Containers[0].Ports}},
		EphemeralContainers: []corev1.EphemeralContainer{debug}}
	want.Status.ContainerStatuses = nil
	want.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	if !equalPods(got, want) {
		t.Errorf("slim pod = %+v, want %+v", got, want)
	}
	full := ownedPod("apps.kruise.io/v1alpha1", "CloneSet", true)
	out, _ = Transform(strip)(full.DeepCopy())
	full.ManagedFields = nil
	if !equalPods(out.(*corev1.Pod), full) {
		t.Errorf("a CloneSet's pod changed beyond its managedFields: %+v", out)
	}
}

func TestTransformPassesOtherObjects(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	out, err := Transform(nil)(node)
	if err != nil || out != node {
		t.Errorf("Transform(node) = %v, %v; want the node unchanged", out, err)
	}
}

func equalPods(a, b *corev1.Pod) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// Slim pods with the same container names and ports share one list; other names or ports get their own.
func TestSlimPodsShareTheirNameLists(t *testing.T) {
	slimmed := func(port int32, names ...string) *corev1.Pod {
		in := ownedPod("apps/v1", "ReplicaSet", true)
		in.Spec.Containers = nil
		for _, n := range names {
			in.Spec.Containers = append(in.Spec.Containers, corev1.Container{Name: n, Image: n + ":v1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}}})
		}
		out, err := Transform(nil)(in)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	a, b, c := slimmed(80, "app", "proxy"), slimmed(80, "app", "proxy"), slimmed(80, "app")
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Error("two pods with containers app and proxy hold two lists")
	}
	if len(c.Spec.Containers) != 1 || c.Spec.Containers[0].Name != "app" || &c.Spec.Containers[0] == &a.Spec.Containers[0] {
		t.Errorf("a pod with container app alone got %+v", c.Spec.Containers)
	}
	d := slimmed(8080, "app", "proxy")
	if &d.Spec.Containers[0] == &a.Spec.Containers[0] || d.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Errorf("a pod whose port differs got %+v", d.Spec.Containers)
	}
}

// Slim pods of one workload share their labels, owner references and strings, each pod decoded on its own;
// a pod whose labels differ keeps its own.
func TestSlimPodsOfAWorkloadShareTheirMetadata(t *testing.T) {
	decoded := func(hash string) *corev1.Pod {
		in := ownedPod("apps/v1", "ReplicaSet", true)
		in.Namespace = strings.Clone("ns")
		in.Labels = map[string]string{strings.Clone("app"): strings.Clone("a"), "pod-template-hash": strings.Clone(hash)}
		in.OwnerReferences[0].Name = strings.Clone("o")
		in.Status.Conditions[0].Type = corev1.PodConditionType(strings.Clone("Ready"))
		out, err := Transform(nil)(in)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	a, b, c := decoded("h1"), decoded("h1"), decoded("h2")
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("two pods with the same labels hold two maps")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(c.Labels).UnsafePointer() || c.Labels["pod-template-hash"] != "h2" {
		t.Errorf("a pod with other labels got %v", c.Labels)
	}
	if &a.OwnerReferences[0] != &c.OwnerReferences[0] || a.OwnerReferences[0].Name != "o" {
		t.Error("pods of one owner hold two owner lists")
	}
	if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) ||
		unsafe.StringData(string(a.Status.Conditions[0].Type)) != unsafe.StringData(string(c.Status.Conditions[0].Type)) {
		t.Error("equal namespaces or condition types are held twice")
	}
}

// A full table starts over, so that values of workloads long gone do not keep newer ones from being shared.
func TestSharedTableStartsOverWhenFull(t *testing.T) {
	var tab table[int]
	for i := range maxInterned {
		tab.get(strconv.Itoa(i), func() int { return i })
	}
	if got := tab.get("new", func() int { return -1 }); got != -1 || len(tab.values) != 1 {
		t.Errorf("after a full table: value %d, %d entries; want a fresh table holding the new value", got, len(tab.values))
	}
	if got := tab.get("new", func() int { return -2 }); got != -1 {
		t.Errorf("the new value is not shared: got %d", got)
	}
}
