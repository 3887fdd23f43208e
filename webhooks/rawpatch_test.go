package webhooks

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

// rawPod carries fields no type of this build knows, at the top, in the spec, in a container and in its
// resources, which hold nothing else.
const rawPod = `{"apiVersion":"v1","kind":"Pod","futureTop":{"a":1},"metadata":{"name":"p","namespace":"ns",` +
	`"labels":{"app":"web","drop":"me"}},"spec":{"futureSpec":[1,2],"containers":[{"name":"app","image":"app:v1",` +
	`"futureContainer":"kept","resources":{"futureResources":true},"env":[{"name":"A","value":"1"}],` +
	`"volumeMounts":[{"name":"data","mountPath":"/data"}]}],"tolerations":[{"key":"a","operator":"Exists"}],` +
	`"volumes":[{"name":"data","emptyDir":{}}]}}`

// podChange is a change a webhook makes to rawPod; direct says whether directPatch tells it without the
// strategic merge.
type podChange struct {
	mutate func(*corev1.Pod)
	direct bool
}

func podChanges() map[string]podChange {
	sidecar := corev1.Container{Name: "proxy", Image: "proxy:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}}}
	return map[string]podChange{
		"annotations on a pod without any": {direct: true, mutate: func(p *corev1.Pod) {
			p.Annotations = map[string]string{"a/b~c": "1", "order": "ab"}
		}},
		"containers before the app's": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append([]corev1.Container{sidecar, {Name: "log", Image: "log:1"}}, p.Spec.Containers...)
		}},
		"containers after, volumes, pull secrets, readiness gates": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sidecar)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cfg"})
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "KruisePodReady"}}
		}},
		"the app container's env and image": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append([]corev1.EnvVar{{Name: "B", Value: "2"}}, p.Spec.Containers[0].Env...)
			p.Spec.Containers[0].Image = "app:v2"
		}},
		"a sidecar before the app, which gets its env and a mount": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append([]corev1.Container{sidecar}, p.Spec.Containers...)
			app := &p.Spec.Containers[1]
			app.Env = append(app.Env, corev1.EnvVar{Name: "PROXY", Value: "on"})
			app.VolumeMounts = append(app.VolumeMounts, corev1.VolumeMount{Name: "cfg", MountPath: "/etc/cfg"})
			p.Spec.Volumes = append([]corev1.Volume{{Name: "cfg"}}, p.Spec.Volumes...)
		}},
		"limits on resources holding only unknown fields, a security context, a toleration": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true)}
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "b", Operator: corev1.TolerationOpExists})
		}},
		"a volume's source replaced": {direct: true, mutate: func(p *corev1.Pod) {
			p.Spec.Volumes[0].EmptyDir = nil
			p.Spec.Volumes[0].ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}
		}},
		"a label removed and one changed": {direct: true, mutate: func(p *corev1.Pod) {
			delete(p.Labels, "drop")
			p.Labels["app"] = "api"
		}},
		"an env var removed": {direct: false, mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "2"}}
		}},
		"a toleration changed": {direct: false, mutate: func(p *corev1.Pod) {
			p.Spec.Tolerations[0].Key = "b"
		}},
		"nothing": {direct: true, mutate: func(*corev1.Pod) {}},
	}
}

// The patch PatchResponse gives, applied as the API server applies it, makes the same object as a strategic
// merge patch merged into the text and a patch from that text, for every kind of change the webhooks make,
// whether or not directPatch tells it; fields no type knows stay.
func TestPatchResponseMatchesTheTextWay(t *testing.T) {
	for name, change := range podChanges() {
		t.Run(name, func(t *testing.T) {
			cur := &corev1.Pod{}
			if err := json.Unmarshal([]byte(rawPod), cur); err != nil {
				t.Fatal(err)
			}
			out := cur.DeepCopy()
			change.mutate(out)
			if _, err := directPatch([]byte(rawPod), cur, out); errors.Is(err, errNotDirect) == change.direct {
				t.Fatalf("directPatch: %v, want direct %v", err, change.direct)
			}
			resp, err := PatchResponse([]byte(rawPod), cur, out)
			if err != nil {
				t.Fatal(err)
			}
			mutated, err := mergeAsText([]byte(rawPod), cur, out)
			if err != nil {
				t.Fatal(err)
			}
			want := applyAsAPIServer(t, admission.PatchResponseFromRaw([]byte(rawPod), mutated))
			got := applyAsAPIServer(t, resp)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("object (-text way +PatchResponse):\n%s", diff)
			}
			for _, path := range []string{"futureTop.a", "spec.futureSpec", "spec.containers.name=app.futureContainer",
				"spec.containers.name=app.resources.futureResources"} {
				if webhooktest.JSONLookup(got, path) == nil {
					t.Errorf("%s was dropped", path)
				}
			}
		})
	}
}

// mergeAsText merges the strategic merge patch from cur to out into raw as JSON text.
func mergeAsText[T any](raw []byte, cur, out *T) ([]byte, error) {
	before, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, cur)
	if err != nil {
		return nil, err
	}
	return strategicpatch.StrategicMergePatch(raw, patch, cur)
}

// A change the strategic merge cannot combine with the request's object is answered with the whole typed
// object; one it can keeps the fields no type knows.
func TestPatchOrReplace(t *testing.T) {
	cur := &corev1.Pod{}
	if err := json.Unmarshal([]byte(rawPod), cur); err != nil {
		t.Fatal(err)
	}
	out := cur.DeepCopy()
	out.Labels["app"] = "api"
	if got := applyAsAPIServer(t, PatchOrReplace([]byte(rawPod), cur, out)); webhooktest.JSONLookup(got, "futureTop.a") == nil ||
		webhooktest.JSONLookup(got, "metadata.labels.app") != "api" {
		t.Errorf("merged object %v", got)
	}
	// A removed env var takes the strategic merge, which cannot combine containers with strings.
	out = cur.DeepCopy()
	out.Spec.Containers[0].Image = "app:v2"
	out.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "B", Value: "2"}}
	odd := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":["app"]}}`
	if _, err := PatchResponse([]byte(odd), cur, out); err == nil {
		t.Fatal("a list of strings merged with a list of containers: the case tests nothing")
	}
	resp := PatchOrReplace([]byte(odd), cur, out)
	got, _ := webhooktest.ApplyJSONPatch(t, odd, resp).(map[string]any)
	if image := webhooktest.JSONLookup(got, "spec.containers.name=app.image"); image != "app:v2" {
		t.Errorf("replaced object %v", got)
	}
}

// applyAsAPIServer applies the response's patch to rawPod as the API server does.
func applyAsAPIServer(t *testing.T, resp admission.Response) map[string]any {
	t.Helper()
	doc, _ := webhooktest.ApplyJSONPatch(t, rawPod, resp).(map[string]any)
	return doc
}

// A workload's freeze (paused, an annotation on an object without any) is told directly too, and lands as
// the text way lands it.
func TestDirectPatchOfADeployment(t *testing.T) {
	raw := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns"},"futureTop":1,` +
		`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"app","image":"app:v2"}]}}}}`
	cur := &appsv1.Deployment{}
	if err := json.Unmarshal([]byte(raw), cur); err != nil {
		t.Fatal(err)
	}
	out := cur.DeepCopy()
	out.Spec.Paused = true
	out.Annotations = map[string]string{"rollouts.kruise.io/in-progressing": "{}"}
	if _, err := directPatch([]byte(raw), cur, out); err != nil {
		t.Fatalf("directPatch: %v", err)
	}
	resp, err := PatchResponse([]byte(raw), cur, out)
	if err != nil {
		t.Fatal(err)
	}
	mutated, err := mergeAsText([]byte(raw), cur, out)
	if err != nil {
		t.Fatal(err)
	}
	want := webhooktest.ApplyJSONPatch(t, raw, admission.PatchResponseFromRaw([]byte(raw), mutated))
	if diff := cmp.Diff(want, webhooktest.ApplyJSONPatch(t, raw, resp)); diff != "" {
		t.Errorf("object (-text way +PatchResponse):\n%s", diff)
	}
}
