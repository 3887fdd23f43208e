package control

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Two Deployments whose selectors both match every ReplicaSet: each reads only the ones it controls, with
// the index and through the fallback of a reader without it.
func TestOwnedReplicaSets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	web, api := ownerDeployment("web", "uid-web"), ownerDeployment("api", "uid-api")
	objs := []appsv1.ReplicaSet{ownedReplicaSet("web-1", web), ownedReplicaSet("web-2", web), ownedReplicaSet("api-1", api), ownedReplicaSet("orphan", nil)}
	builders := map[string]*fake.ClientBuilder{
		"indexed":   fake.NewClientBuilder().WithScheme(scheme).WithIndex(&appsv1.ReplicaSet{}, ReplicaSetOwnerIndex, ReplicaSetOwnerKey),
		"unindexed": fake.NewClientBuilder().WithScheme(scheme),
	}
	for name, b := range builders {
		for i := range objs {
			b = b.WithObjects(&objs[i])
		}
		c := b.Build()
		for d, want := range map[*appsv1.Deployment][]string{web: {"web-1", "web-2"}, api: {"api-1"}} {
			got, err := OwnedReplicaSets(t.Context(), c, d)
			if err != nil {
				t.Fatalf("%s %s: %v", name, d.Name, err)
			}
			if names := replicaSetNames(got); !slices.Equal(names, want) {
				t.Errorf("%s %s: got %v, want %v", name, d.Name, names, want)
			}
		}
	}
}

func ownerDeployment(name string, uid types.UID) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}},
	}
}

func ownedReplicaSet(name string, owner *appsv1.Deployment) appsv1.ReplicaSet {
	rs := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "shop"}}}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	return rs
}

func replicaSetNames(rss []appsv1.ReplicaSet) []string {
	names := make([]string, 0, len(rss))
	for _, rs := range rss {
		names = append(names, rs.Name)
	}
	slices.Sort(names)
	return names
}
