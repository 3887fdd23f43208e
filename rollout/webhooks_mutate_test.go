package rollout

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

var (
	deploymentGVK        = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	nativeDaemonSetGVK   = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	statefulSetGVK       = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	cloneSetGVK          = metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	advancedDaemonSetGVK = metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet"}
)

// workloadDoc renders a workload as the API server would send it; extra is spliced into spec.
func workloadDoc(gvk metav1.GroupVersionKind, image, extra string) map[string]any {
	doc := `{"apiVersion":"` + gvk.Group + "/" + gvk.Version + `","kind":"` + gvk.Kind + `",
		"metadata":{"name":"echo","namespace":"ns","uid":"uid-1","labels":{"rollouts.kruise.io/workload-type":"x"}},
		"spec":{` + extra + `"selector":{"matchLabels":{"app":"echo"}},
			"template":{"metadata":{"labels":{"app":"echo"}},"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}}}`
	doc = strings.Replace(doc, `"apiVersion":"/`, `"apiVersion":"`, 1)
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return m
}

func workloadRollout(apiVersion, kind, name string) *rolloutsv1beta1.Rollout {
	r := betaRollout("demo", name)
	r.TypeMeta = metav1.TypeMeta{}
	r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: apiVersion, Kind: kind, Name: name}
	return r
}

func stableReplicaSet() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "echo-h1", Namespace: "ns", Labels: map[string]string{"app": "echo", "pod-template-hash": "h1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo", UID: "uid-1", Controller: ptr.To(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "echo"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "echo", "pod-template-hash": "h1"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "echo:v1"}}},
			},
		},
	}
}

// applyPatch applies the response's patch to raw as the API server does.
func applyPatch(t *testing.T, raw []byte, resp admission.Response) map[string]any {
	t.Helper()
	doc, _ := webhooktest.ApplyJSONPatch(t, string(raw), resp).(map[string]any)
	return doc
}

func valueAt(doc map[string]any, path ...string) any {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

type mutateCase struct {
	name     string
	path     string
	existing []client.Object
	req      admission.Request
	want     responseWant
	// fields are expected values at paths of the patched object; nil expects no patch.
	fields map[string]any
}

func runMutateCases(t *testing.T, cases []mutateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := handlersFor(t, tc.existing...)[tc.path].Handle(context.Background(), tc.req)
			checkResponse(t, resp, tc.want)
			if tc.fields == nil {
				if len(resp.Patches) > 0 {
					t.Errorf("unexpected patches %+v", resp.Patches)
				}
				return
			}
			patched := applyPatch(t, tc.req.Object.Raw, resp)
			for path, want := range tc.fields {
				got := valueAt(patched, strings.Split(path, ".")...)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

func update(t *testing.T, gvk metav1.GroupVersionKind, cur, old map[string]any) admission.Request {
	return request(t, admissionv1.Update, gvk, cur, old)
}

const inProgressingDemo = `{"rolloutName":"demo"}`

func TestDeploymentMutation(t *testing.T) {
	rollout := workloadRollout("apps/v1", "Deployment", "echo")
	v1, v2 := workloadDoc(deploymentGVK, "echo:v1", `"replicas":2,`), workloadDoc(deploymentGVK, "echo:v2", `"replicas":2,`)
	inProgress := workloadDoc(deploymentGVK, "echo:v2", `"replicas":2,"strategy":{"type":"Recreate"},`)
	inProgress["metadata"].(map[string]any)["annotations"] = map[string]any{rolloutsv1beta1.InProgressingAnnotation: inProgressingDemo}
	inProgressOld := workloadDoc(deploymentGVK, "echo:v2", `"replicas":2,"paused":true,"strategy":{"type":"RollingUpdate"},`)
	inProgressOld["metadata"].(map[string]any)["annotations"] = map[string]any{rolloutsv1beta1.InProgressingAnnotation: inProgressingDemo}
	withFuture := workloadDoc(deploymentGVK, "echo:v2", `"replicas":2,"futureField":{"a":1},`)
	partitionAnnotations := map[string]any{
		rolloutsv1beta1.InProgressingAnnotation:      inProgressingDemo,
		rolloutsv1beta1.DeploymentStrategyAnnotation: `{"rollingStyle":"Partition","rollingUpdate":{"maxUnavailable":0,"maxSurge":1},"partition":1}`,
	}
	partitionOld := workloadDoc(deploymentGVK, "echo:v2", `"paused":true,"strategy":{"type":"Recreate"},`)
	partitionOld["metadata"].(map[string]any)["annotations"] = partitionAnnotations
	partitionApplied := workloadDoc(deploymentGVK, "echo:v2", `"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"10%","maxSurge":0}},`)
	partitionApplied["metadata"].(map[string]any)["annotations"] = partitionAnnotations

	runMutateCases(t, []mutateCase{
		{name: "enters the release", path: MutateDeploymentPath, existing: []client.Object{rollout, stableReplicaSet()},
			req: update(t, deploymentGVK, v2, v1), want: responseWant{allowed: true},
			fields: map[string]any{
				"spec.paused":          true,
				"metadata.annotations": map[string]any{rolloutsv1beta1.InProgressingAnnotation: inProgressingDemo},
				"metadata.labels":      map[string]any{"rollouts.kruise.io/workload-type": "x", rolloutsv1beta1.DeploymentStableRevisionLabel: "h1"},
			}},
		{name: "fields unknown to the typed object are kept", path: MutateDeploymentPath, existing: []client.Object{rollout, stableReplicaSet()},
			req: update(t, deploymentGVK, withFuture, v1), want: responseWant{allowed: true},
			fields: map[string]any{"spec.paused": true, "spec.futureField": map[string]any{"a": float64(1)}}},
		{name: "partition release stays frozen", path: MutateDeploymentPath, existing: []client.Object{rollout},
			req: update(t, deploymentGVK, partitionApplied, partitionOld), want: responseWant{allowed: true},
			fields: map[string]any{
				"spec.paused":   true,
				"spec.strategy": map[string]any{"type": "Recreate"},
				"metadata.annotations": map[string]any{
					rolloutsv1beta1.InProgressingAnnotation:      inProgressingDemo,
					rolloutsv1beta1.DeploymentStrategyAnnotation: `{"rollingStyle":"Partition","rollingUpdate":{"maxUnavailable":"10%","maxSurge":0},"partition":1}`,
				},
			}},
		{name: "no Rollout", path: MutateDeploymentPath, existing: []client.Object{stableReplicaSet()},
			req: update(t, deploymentGVK, v2, v1), want: responseWant{allowed: true}},
		{name: "no change", path: MutateDeploymentPath, existing: []client.Object{rollout, stableReplicaSet()},
			req: update(t, deploymentGVK, v1, v1), want: responseWant{allowed: true}},
		{name: "canary release refuses Recreate", path: MutateDeploymentPath, existing: []client.Object{rollout},
			req:  update(t, deploymentGVK, inProgress, inProgressOld),
			want: responseWant{code: http.StatusForbidden, message: "may not change to Recreate while Rollout demo releases this Deployment"}},
		{name: "create is ignored", path: MutateDeploymentPath, existing: []client.Object{rollout, stableReplicaSet()},
			req: request(t, admissionv1.Create, deploymentGVK, v2, nil), want: responseWant{allowed: true}},
		{name: "scale subresource is ignored", path: MutateDeploymentPath, existing: []client.Object{rollout, stableReplicaSet()},
			req: func() admission.Request {
				r := update(t, deploymentGVK, v2, v1)
				r.SubResource = "scale"
				return r
			}(), want: responseWant{allowed: true}},
		{name: "undecodable", path: MutateDeploymentPath, req: admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Kind: deploymentGVK, Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: []byte("[")},
		}}, want: responseWant{code: http.StatusBadRequest}},
	})
}

// A cache that has not yet seen the Rollout or the ReplicaSets (a standby replica that just took over the
// webhook, a Rollout created a moment ago) still holds the new revision: the misses are read again live.
func TestDeploymentMutationReadsMissesLive(t *testing.T) {
	scheme := rolloutTestScheme(t)
	rollout := workloadRollout("apps/v1", "Deployment", "echo")
	v1, v2 := workloadDoc(deploymentGVK, "echo:v1", `"replicas":2,`), workloadDoc(deploymentGVK, "echo:v2", `"replicas":2,`)
	v1["status"] = map[string]any{"replicas": 2}
	tests := []struct {
		name   string
		cached []client.Object
		live   client.Reader
		paused any
	}{
		{"Rollout and ReplicaSets read live", nil, fake.NewClientBuilder().WithScheme(scheme).WithObjects(rollout, stableReplicaSet()).Build(), true},
		{"ReplicaSets read live", []client.Object{rollout}, fake.NewClientBuilder().WithScheme(scheme).WithObjects(stableReplicaSet()).Build(), true},
		{"no live reader: let through", []client.Object{rollout}, nil, nil},
		{"nothing live either", nil, fake.NewClientBuilder().WithScheme(scheme).Build(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.cached...).Build()
			handlers := rolloutHandlers(Readers{Cached: cached, Live: tt.live}, admission.NewDecoder(scheme), rolloutadmission.DefaultOptions())
			req := update(t, deploymentGVK, v2, v1)
			resp := handlers[MutateDeploymentPath].Handle(context.Background(), req)
			checkResponse(t, resp, responseWant{allowed: true})
			if got := valueAt(applyPatch(t, req.Object.Raw, resp), "spec", "paused"); got != tt.paused {
				t.Errorf("spec.paused = %v, want %v", got, tt.paused)
			}
		})
	}
}

func TestDeploymentMutationReaderFailure(t *testing.T) {
	v1, v2 := workloadDoc(deploymentGVK, "echo:v1", ""), workloadDoc(deploymentGVK, "echo:v2", "")
	resp := failingHandlers(t)[MutateDeploymentPath].Handle(context.Background(), update(t, deploymentGVK, v2, v1))
	checkResponse(t, resp, responseWant{code: http.StatusInternalServerError, message: "cache unavailable"})
}

func TestKruiseAndDaemonSetMutation(t *testing.T) {
	cloneSetRollout := workloadRollout("apps.kruise.io/v1alpha1", "CloneSet", "echo")
	advancedRollout := workloadRollout("apps.kruise.io/v1alpha1", "DaemonSet", "echo")
	nativeRollout := workloadRollout("apps/v1", "DaemonSet", "echo")
	inProgressing := map[string]any{rolloutsv1beta1.InProgressingAnnotation: inProgressingDemo}

	runMutateCases(t, []mutateCase{
		{name: "CloneSet without updateStrategy", path: MutateCloneSetPath, existing: []client.Object{cloneSetRollout},
			req:    update(t, cloneSetGVK, workloadDoc(cloneSetGVK, "echo:v2", `"replicas":2,`), workloadDoc(cloneSetGVK, "echo:v1", `"replicas":2,`)),
			want:   responseWant{allowed: true},
			fields: map[string]any{"spec.updateStrategy": map[string]any{"partition": "100%"}, "metadata.annotations": inProgressing}},
		{name: "CloneSet keeps its update settings", path: MutateCloneSetPath, existing: []client.Object{cloneSetRollout},
			req: update(t, cloneSetGVK, workloadDoc(cloneSetGVK, "echo:v2", `"updateStrategy":{"type":"InPlaceIfPossible","partition":1},`),
				workloadDoc(cloneSetGVK, "echo:v1", `"updateStrategy":{"type":"InPlaceIfPossible","partition":1},`)),
			want:   responseWant{allowed: true},
			fields: map[string]any{"spec.updateStrategy": map[string]any{"type": "InPlaceIfPossible", "partition": "100%"}}},
		{name: "CloneSet of another Rollout's workload", path: MutateCloneSetPath, existing: []client.Object{workloadRollout("apps.kruise.io/v1alpha1", "CloneSet", "web")},
			req:  update(t, cloneSetGVK, workloadDoc(cloneSetGVK, "echo:v2", ""), workloadDoc(cloneSetGVK, "echo:v1", "")),
			want: responseWant{allowed: true}},
		{name: "Advanced DaemonSet", path: MutateAdvancedDaemonSetPath, existing: []client.Object{advancedRollout},
			req:    update(t, advancedDaemonSetGVK, workloadDoc(advancedDaemonSetGVK, "echo:v2", ""), workloadDoc(advancedDaemonSetGVK, "echo:v1", "")),
			want:   responseWant{allowed: true},
			fields: map[string]any{"spec.updateStrategy.rollingUpdate.partition": float64(32767), "metadata.annotations": inProgressing}},
		{name: "native DaemonSet", path: MutateDaemonSetPath, existing: []client.Object{nativeRollout},
			req: update(t, nativeDaemonSetGVK, workloadDoc(nativeDaemonSetGVK, "echo:v2", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}},`),
				workloadDoc(nativeDaemonSetGVK, "echo:v1", `"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}},`)),
			want: responseWant{allowed: true},
			fields: map[string]any{
				"spec.updateStrategy": map[string]any{"type": "OnDelete", "rollingUpdate": map[string]any{"maxUnavailable": float64(1)}},
				"metadata.annotations": map[string]any{
					rolloutsv1beta1.InProgressingAnnotation:                   inProgressingDemo,
					rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation: "RollingUpdate",
				},
			}},
	})
}

func TestUnifiedMutation(t *testing.T) {
	stsRollout := workloadRollout("apps/v1", "StatefulSet", "echo")
	gameGVK := metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "GameServerSet"}
	game := func(image string) map[string]any {
		doc := workloadDoc(gameGVK, image, `"replicas":3,`)
		doc["metadata"].(map[string]any)["labels"] = map[string]any{rolloutsv1beta1.WorkloadTypeLabel: "statefulset"}
		return doc
	}
	frozen := map[string]any{"spec.updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": float64(32767)}},
		"metadata.annotations": map[string]any{rolloutsv1beta1.InProgressingAnnotation: inProgressingDemo}}

	runMutateCases(t, []mutateCase{
		{name: "StatefulSet", path: MutateUnifiedWorkloadPath, existing: []client.Object{stsRollout},
			req:  update(t, statefulSetGVK, workloadDoc(statefulSetGVK, "echo:v2", ""), workloadDoc(statefulSetGVK, "echo:v1", "")),
			want: responseWant{allowed: true}, fields: frozen},
		{name: "labelled custom kind", path: MutateUnifiedWorkloadPath, existing: []client.Object{workloadRollout("example.com/v1", "GameServerSet", "echo")},
			req: update(t, gameGVK, game("echo:v2"), game("echo:v1")), want: responseWant{allowed: true}, fields: frozen},
		{name: "Deployment is left to its own webhook", path: MutateUnifiedWorkloadPath,
			existing: []client.Object{workloadRollout("apps/v1", "Deployment", "echo"), stableReplicaSet()},
			req:      update(t, deploymentGVK, workloadDoc(deploymentGVK, "echo:v2", ""), workloadDoc(deploymentGVK, "echo:v1", "")),
			want:     responseWant{allowed: true}},
		{name: "unlabelled custom kind", path: MutateUnifiedWorkloadPath, existing: []client.Object{workloadRollout("example.com/v1", "GameServerSet", "echo")},
			req: update(t, gameGVK, workloadDoc(gameGVK, "echo:v2", ""), workloadDoc(gameGVK, "echo:v1", "")), want: responseWant{allowed: true}},
		{name: "create is allowed untouched", path: MutateUnifiedWorkloadPath, existing: []client.Object{stsRollout},
			req: request(t, admissionv1.Create, statefulSetGVK, workloadDoc(statefulSetGVK, "echo:v2", ""), nil), want: responseWant{allowed: true}},
		{name: "malformed update strategy is denied", path: MutateUnifiedWorkloadPath, existing: []client.Object{stsRollout},
			req: update(t, statefulSetGVK, workloadDoc(statefulSetGVK, "echo:v2", `"updateStrategy":{"rollingUpdate":[]},`),
				workloadDoc(statefulSetGVK, "echo:v1", "")),
			want: responseWant{code: http.StatusForbidden, message: "spec.updateStrategy.rollingUpdate is a []interface {}, not an object"}},
	})
}

func TestUnifiedSkipsKindsWithTheirOwnWebhook(t *testing.T) {
	for gk := range unifiedSkipped {
		gvk := metav1.GroupVersionKind{Group: gk.Group, Version: "v1", Kind: gk.Kind}
		req := update(t, gvk, map[string]any{"kind": "broken"}, nil)
		resp := handlersFor(t)[MutateUnifiedWorkloadPath].Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patches) > 0 {
			t.Errorf("%s: %+v", gk, resp)
		}
	}
}
