package admission

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// object decodes JSON the way the admission decoder does (numbers become int64).
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return u
}

// statefulSet renders a StatefulSet-like object; spec is the JSON of its spec.
func statefulSet(apiVersion, kind, labels, spec string) string {
	return `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{"name":"db","namespace":"ns","uid":"sts-uid"` +
		labels + `},"spec":` + spec + `}`
}

func stsSpec(image string, extra string) string {
	return `{` + extra + `"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}}`
}

func TestIsStatefulSetLike(t *testing.T) {
	cases := []struct {
		doc  string
		want bool
	}{
		{statefulSet("apps/v1", "StatefulSet", "", "{}"), true},
		{statefulSet("apps.kruise.io/v1beta1", "StatefulSet", "", "{}"), true},
		{statefulSet("apps.kruise.io/v1alpha1", "StatefulSet", "", "{}"), true},
		{statefulSet("example.com/v1", "GameServerSet", `,"labels":{"rollouts.kruise.io/workload-type":"statefulset"}`, "{}"), true},
		{statefulSet("example.com/v1", "GameServerSet", `,"labels":{"rollouts.kruise.io/workload-type":"cloneset"}`, "{}"), false},
		{statefulSet("example.com/v1", "StatefulSet", "", "{}"), false},
		{statefulSet("apps/v1", "Deployment", "", "{}"), false},
	}
	for _, tc := range cases {
		if got := IsStatefulSetLike(object(t, tc.doc)); got != tc.want {
			t.Errorf("IsStatefulSetLike(%s) = %v, want %v", tc.doc, got, tc.want)
		}
	}
	if IsStatefulSetLike(nil) {
		t.Error("IsStatefulSetLike(nil) = true")
	}
}

func TestFreezeStatefulSetLike(t *testing.T) {
	const frozenAnnotations = `"annotations":{"rollouts.kruise.io/in-progressing":"{\"rolloutName\":\"demo\"}"}`
	gameLabels := `,"labels":{"rollouts.kruise.io/workload-type":"statefulset"}`
	cases := []struct {
		name    string
		old     string
		cur     string
		rollout *rolloutsv1beta1.Rollout
		want    string // "" expects no change
		wantErr string
	}{
		{name: "native StatefulSet",
			old: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", `"replicas":3,`)),
			cur: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", `"replicas":3,`)), rollout: canaryRollout(),
			want: statefulSet("apps/v1", "StatefulSet", ","+frozenAnnotations,
				stsSpec("db:v2", `"replicas":3,"updateStrategy":{"rollingUpdate":{"partition":32767}},`))},
		{name: "keeps the other rolling update fields",
			old:     statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2,"partition":1}},`)),
			cur:     statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2,"partition":1}},`)),
			rollout: canaryRollout(),
			want: statefulSet("apps/v1", "StatefulSet", ","+frozenAnnotations,
				stsSpec("db:v2", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":2,"partition":32767}},`))},
		{name: "custom kind with null rollingUpdate",
			old:     statefulSet("example.com/v1", "GameServerSet", gameLabels, stsSpec("db:v1", `"updateStrategy":{"rollingUpdate":null},`)),
			cur:     statefulSet("example.com/v1", "GameServerSet", gameLabels, stsSpec("db:v2", `"updateStrategy":{"rollingUpdate":null},`)),
			rollout: canaryRollout(),
			want: statefulSet("example.com/v1", "GameServerSet", gameLabels+","+frozenAnnotations,
				stsSpec("db:v2", `"updateStrategy":{"rollingUpdate":{"partition":32767}},`))},
		{name: "OnDelete",
			old: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", `"updateStrategy":{"type":"OnDelete"},`)),
			cur: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", `"updateStrategy":{"type":"OnDelete"},`)), rollout: canaryRollout()},
		{name: "no replicas",
			old: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", `"replicas":0,`)),
			cur: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", `"replicas":0,`)), rollout: canaryRollout()},
		{name: "only the pod-template-hash label",
			old:     statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", "")),
			cur:     strings.Replace(statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", "")), `"app":"db"`, `"app":"db","pod-template-hash":"x"`, 1),
			rollout: canaryRollout()},
		{name: "no Rollout",
			old: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", "")),
			cur: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", ""))},
		{name: "not StatefulSet-like",
			old: statefulSet("example.com/v1", "GameServerSet", "", stsSpec("db:v1", "")),
			cur: statefulSet("example.com/v1", "GameServerSet", "", stsSpec("db:v2", "")), rollout: canaryRollout()},
		{name: "no template",
			old: statefulSet("apps/v1", "StatefulSet", "", `{}`),
			cur: statefulSet("apps/v1", "StatefulSet", "", `{"replicas":2}`), rollout: canaryRollout()},
		{name: "malformed update strategy",
			old: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v1", `"updateStrategy":{"rollingUpdate":"x"},`)),
			cur: statefulSet("apps/v1", "StatefulSet", "", stsSpec("db:v2", `"updateStrategy":{"rollingUpdate":"x"},`)), rollout: canaryRollout(),
			wantErr: "spec.updateStrategy.rollingUpdate is a string, not an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := object(t, tc.cur)
			before := cur.DeepCopy()
			got, err := FreezeStatefulSetLike(object(t, tc.old), cur, tc.rollout)
			if !errorMatches(err, tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(before, cur); diff != "" {
				t.Errorf("the input was modified (-before +after):\n%s", diff)
			}
			var want *unstructured.Unstructured
			if tc.want != "" {
				want = object(t, tc.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				gotJSON, _ := json.Marshal(got)
				t.Errorf("result (-want +got):\n%s\ngot %s", diff, gotJSON)
			}
		})
	}
}

func TestUnstructuredReplicas(t *testing.T) {
	cases := map[string]int64{
		`{}`:                         1,
		`{"spec":{}}`:                1,
		`{"spec":{"replicas":null}}`: 1,
		`{"spec":{"replicas":5}}`:    5,
		`{"spec":{"replicas":"5"}}`:  0,
	}
	for doc, want := range cases {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if got := unstructuredReplicas(u); got != want {
			t.Errorf("unstructuredReplicas(%s) = %d, want %d", doc, got, want)
		}
	}
}
