package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// gameDemo is the seed's ConfigMap, as spec.resource holds it.
const gameDemo = `{"apiVersion":"v1","data":{"player_initial_lives":"3"},"kind":"ConfigMap","metadata":{"labels":{"app":"game"},"name":"game-demo"}}`

func distribution(raw string) *kruiseappsv1alpha1.ResourceDistribution {
	rd := &kruiseappsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "sample", UID: "rd-uid", Generation: 3},
	}
	rd.Spec.Resource.Raw = []byte(raw)
	return rd
}

func decode(t *testing.T, raw string) *Resource {
	t.Helper()
	res, err := Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func names(list ...string) []kruiseappsv1alpha1.ResourceDistributionNamespace {
	out := make([]kruiseappsv1alpha1.ResourceDistributionNamespace, len(list))
	for i, n := range list {
		out[i].Name = n
	}
	return out
}

func namespaces(list ...Namespace) map[string]Namespace {
	out := map[string]Namespace{}
	for _, n := range list {
		out[n.Name] = n
	}
	return out
}

// copyIn is rd's current copy of res in ns, as the API server stores it.
func copyIn(rd *kruiseappsv1alpha1.ResourceDistribution, res *Resource, ns string) client.Object {
	obj := NewCopy(rd, res, ns, nil, now.Add(-time.Hour))
	obj.SetResourceVersion("7")
	return obj
}

// foreign is a ConfigMap named like the resource that no ResourceDistribution controls.
func foreign(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "game-demo", ResourceVersion: "1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", Controller: ptr.To(true)}}}}
}

func keys(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	return out
}
