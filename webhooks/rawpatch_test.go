package webhooks

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

// rawPod carries fields no type of this build knows, at the top, in the spec and in a container.
const rawPod = `{"apiVersion":"v1","kind":"Pod","futureTop":{"a":1},"metadata":{"name":"p","namespace":"ns",` +
	`"labels":{"app":"web","drop":"me"}},"spec":{"futureSpec":[1,2],"containers":[{"name":"app","image":"app:v1",` +
	`"futureContainer":"kept","env":[{"name":"A","value":"1"}]}],"volumes":[{"name":"data","emptyDir":{}}]}}`

// The patch PatchResponse gives, applied as the API server applies it, makes the same object as a strategic
// merge patch merged into the text and a patch from that text, for every kind of change the webhooks make; fields no type knows stay.
func TestPatchResponseMatchesTheTextWay(t *testing.T) {
	sidecar := corev1.Container{Name: "proxy", Image: "proxy:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}}}
	for name, mutate := range map[string]func(*corev1.Pod){
		"annotations on a pod without any": func(p *corev1.Pod) {
			p.Annotations = map[string]string{"a/b~c": "1", "order": "ab"}
		},
		"containers before the app's": func(p *corev1.Pod) {
			p.Spec.Containers = append([]corev1.Container{sidecar, {Name: "log", Image: "log:1"}}, p.Spec.Containers...)
		},
		"containers after, volumes, pull secrets, readiness gates": func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, sidecar)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cfg"})
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "KruisePodReady"}}
		},
		"the app container's env and image": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append([]corev1.EnvVar{{Name: "B", Value: "2"}}, p.Spec.Containers[0].Env...)
			p.Spec.Containers[0].Image = "app:v2"
		},
		"a label removed and one changed": func(p *corev1.Pod) {
			delete(p.Labels, "drop")
			p.Labels["app"] = "api"
		},
		"nothing": func(*corev1.Pod) {},
	} {
		t.Run(name, func(t *testing.T) {
			cur := &corev1.Pod{}
			if err := json.Unmarshal([]byte(rawPod), cur); err != nil {
				t.Fatal(err)
			}
			out := cur.DeepCopy()
			mutate(out)
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
			for _, path := range []string{"futureTop.a", "spec.futureSpec", "spec.containers.name=app.futureContainer"} {
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
	out = cur.DeepCopy()
	out.Spec.Containers[0].Image = "app:v2"
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
