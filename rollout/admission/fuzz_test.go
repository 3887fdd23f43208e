package admission

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func rolloutSeeds(t interface{ Fatal(...any) }) []string {
	var seeds []string
	for _, r := range []any{canaryRollout(), blueGreenRollout(), alphaRollout()} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, string(b))
	}
	return append(seeds,
		`{"metadata":{"annotations":{"rollouts.kruise.io/rolling-style":"x","rollouts.kruise.io/rollback-in-batch":"1"}},"spec":{"objectRef":{},"strategy":{"canary":{"steps":[{"weight":-1,"replicas":"x%"},{}]}}}}`,
		`{"spec":{"workloadRef":{"apiVersion":"/","kind":"","name":""},"strategy":{"canary":{"steps":[{"replicas":"-0%","traffic":"%"}],"trafficRoutings":[{},{"gateway":{}}]},"blueGreen":{}}},"status":{"phase":"Progressing"}}`,
	)
}

// FuzzValidateRollout feeds arbitrary JSON to every validation entry point, in both API versions; none may
// panic, whatever the object holds.
func FuzzValidateRollout(f *testing.F) {
	for _, s := range rolloutSeeds(f) {
		f.Add(s, s)
	}
	f.Fuzz(func(_ *testing.T, oldDoc, newDoc string) {
		var oldBeta, newBeta rolloutsv1beta1.Rollout
		_ = json.Unmarshal([]byte(oldDoc), &oldBeta)
		_ = json.Unmarshal([]byte(newDoc), &newBeta)
		others := []rolloutsv1beta1.Rollout{oldBeta, newBeta}
		opts := DefaultOptions()
		_ = ValidateRollout(&newBeta, others, opts)
		_ = ValidateRolloutUpdate(&oldBeta, &newBeta, others, Options{})
		var oldAlpha, newAlpha rolloutsv1alpha1.Rollout
		_ = json.Unmarshal([]byte(oldDoc), &oldAlpha)
		_ = json.Unmarshal([]byte(newDoc), &newAlpha)
		_ = ValidateV1alpha1Rollout(&newAlpha, others, opts)
		_ = ValidateV1alpha1RolloutUpdate(&oldAlpha, &newAlpha, others, opts)
	})
}

// FuzzFreeze feeds arbitrary JSON workloads to the Deployment and StatefulSet-like freezes.
func FuzzFreeze(f *testing.F) {
	f.Add(`{"metadata":{"annotations":{"rollouts.kruise.io/in-progressing":"{"}},"spec":{"replicas":1}}`,
		`{"metadata":{"annotations":{"rollouts.kruise.io/in-progressing":"x","rollouts.kruise.io/deployment-strategy":"{\"rollingStyle\":\"partition\"}"}},"spec":{"strategy":{"rollingUpdate":{"maxSurge":"0%","maxUnavailable":0}}}}`)
	f.Add(`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"template":{}}}`,
		`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":2.5,"updateStrategy":{"rollingUpdate":[]},"template":{"metadata":{"labels":null}}}}`)
	rollout := canaryRollout()
	routed := routedRollout()
	f.Fuzz(func(_ *testing.T, oldDoc, newDoc string) {
		var oldD, newD appsv1.Deployment
		_ = json.Unmarshal([]byte(oldDoc), &oldD)
		_ = json.Unmarshal([]byte(newDoc), &newD)
		rss := []appsv1.ReplicaSet{{Spec: appsv1.ReplicaSetSpec{Template: oldD.Spec.Template}}}
		_, _ = FreezeDeployment(&oldD, &newD, rollout, rss)
		_, _ = FreezeDeployment(&oldD, &newD, routed, nil)
		oldU, newU := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		if oldU.UnmarshalJSON([]byte(oldDoc)) != nil || newU.UnmarshalJSON([]byte(newDoc)) != nil {
			return
		}
		_, _ = FreezeStatefulSetLike(oldU, newU, rollout)
	})
}
