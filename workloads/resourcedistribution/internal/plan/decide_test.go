package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestDecode(t *testing.T) {
	res := decode(t, gameDemo)
	sum := sha256.Sum256([]byte(gameDemo))
	if res.Kind != KindConfigMap || res.Name() != "game-demo" || res.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("decoded %s %s hash %s", res.Kind, res.Name(), res.Hash)
	}
	if cm, ok := res.Object.(*corev1.ConfigMap); !ok || cm.Data["player_initial_lives"] != "3" {
		t.Errorf("object %#v", res.Object)
	}
	secret := decode(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":"v"}}`)
	if s, ok := secret.Object.(*corev1.Secret); !ok || s.StringData["k"] != "v" {
		t.Errorf("secret %#v", secret.Object)
	}
	for raw, want := range map[string]string{
		"": ErrEmpty.Error(),
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`: Supported,
		`{"apiVersion":"v2","kind":"Secret","metadata":{"name":"d"}}`:          Supported,
		`{"apiVersion":"v1","kind":"Pod"}`:                                     Supported,
		`{"apiVersion":"v1","kind":"Secret","data":{"k":"not base64!"}}`:       "failed to deserialize resource",
		`[`: "failed to deserialize resource",
	} {
		if _, err := Decode([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s): %v, want %q", raw, err, want)
		}
	}
}

func TestNewCopy(t *testing.T) {
	rd := distribution(gameDemo)
	res := decode(t, gameDemo)
	got := NewCopy(rd, res, "ns-1", nil, now)
	if got.GetNamespace() != "ns-1" || got.GetName() != "game-demo" || got.GetLabels()["app"] != "game" || got.GetResourceVersion() != "" {
		t.Errorf("copy %+v", got)
	}
	want := map[string]string{
		"kruise.io/resourcedistribution.resource.from":                  "sample",
		"kruise.io/resourcedistribution.resource.hashcode":              res.Hash,
		"kruise.io/resourcedistribution.resource.distributed.timestamp": "2024-05-01 12:00:00 +0000 UTC",
	}
	if diff := cmp.Diff(want, got.GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	ref := metav1.GetControllerOf(got)
	if ref == nil || ref.APIVersion != "apps.kruise.io/v1alpha1" || ref.Kind != "ResourceDistribution" || ref.Name != "sample" ||
		ref.UID != "rd-uid" || len(got.GetOwnerReferences()) != 1 {
		t.Errorf("owners %+v", got.GetOwnerReferences())
	}
	if res.Object.GetNamespace() != "" || len(res.Object.GetAnnotations()) != 0 {
		t.Error("NewCopy changed the resource")
	}
}

// An update keeps what others added to the copy, and what the resource sets wins.
func TestNewCopyMergesMetadata(t *testing.T) {
	rd := distribution(gameDemo)
	res := decode(t, gameDemo)
	old := copyIn(rd, res, "ns-1")
	old.SetLabels(map[string]string{"app": "theirs", "team": "a"})
	old.SetAnnotations(map[string]string{"note": "kept", "kruise.io/resourcedistribution.resource.hashcode": "old"})
	old.SetFinalizers([]string{"z.io/keep", "a.io/keep"})
	old.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ResourceDistribution",
		Name: "sample", UID: "earlier", Controller: ptr.To(true)}})
	got := NewCopy(rd, res, "ns-1", old, now)
	if diff := cmp.Diff(map[string]string{"app": "game", "team": "a"}, got.GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if a := got.GetAnnotations(); a["note"] != "kept" || a["kruise.io/resourcedistribution.resource.hashcode"] != res.Hash {
		t.Errorf("annotations %v", a)
	}
	if f := got.GetFinalizers(); !slices.Equal(f, []string{"a.io/keep", "z.io/keep"}) {
		t.Errorf("finalizers %v", f)
	}
	if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "rd-uid" {
		t.Errorf("owners %+v: the earlier distribution's reference stays", refs)
	}
	if got.GetResourceVersion() != "7" {
		t.Errorf("resourceVersion %q, want the old copy's", got.GetResourceVersion())
	}
}

func TestCurrent(t *testing.T) {
	rd := distribution(gameDemo)
	res := decode(t, gameDemo)
	for name, tc := range map[string]struct {
		edit func(client.Object)
		want bool
	}{
		"as written":        {func(client.Object) {}, true},
		"a label added":     {func(o client.Object) { o.SetLabels(map[string]string{"x": "y"}) }, true},
		"data edited":       {func(o client.Object) { o.(*corev1.ConfigMap).Data["player_initial_lives"] = "9" }, false},
		"binary data added": {func(o client.Object) { o.(*corev1.ConfigMap).BinaryData = map[string][]byte{"b": {1}} }, false},
		"made immutable":    {func(o client.Object) { o.(*corev1.ConfigMap).Immutable = ptr.To(true) }, false},
		"hash changed": {func(o client.Object) {
			o.GetAnnotations()[kruiseappsv1alpha1.ResourceDistributionHashCodeAnnotation] = "x"
		}, false},
		"source removed": {func(o client.Object) {
			delete(o.GetAnnotations(), kruiseappsv1alpha1.ResourceDistributionSourceAnnotation)
		}, false},
		"an earlier owner":    {func(o client.Object) { o.GetOwnerReferences()[0].UID = "earlier" }, false},
		"timestamp changed":   {func(o client.Object) { o.GetAnnotations()[TimestampAnnotation] = "then" }, true},
		"immutable false set": {func(o client.Object) { o.(*corev1.ConfigMap).Immutable = ptr.To(false) }, true},
	} {
		obj := copyIn(rd, res, "ns-1")
		tc.edit(obj)
		if got := Current(rd, res, obj); got != tc.want {
			t.Errorf("%s: Current = %v, want %v", name, got, tc.want)
		}
	}
}

// A Secret compares as the API server stores it: stringData folded into data, type Opaque by default.
func TestCurrentSecret(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"YQ=="},"stringData":{"b":"bb","a":"A"}}`
	rd := distribution(raw)
	res := decode(t, raw)
	stored := copyIn(rd, res, "ns-1").(*corev1.Secret)
	stored.StringData, stored.Type = nil, corev1.SecretTypeOpaque
	stored.Data = map[string][]byte{"a": []byte("A"), "b": []byte("bb")}
	if !Current(rd, res, stored) {
		t.Error("the stored form of the secret is not current")
	}
	stored.Type = corev1.SecretTypeBasicAuth
	if Current(rd, res, stored) {
		t.Error("a secret of another type is current")
	}
	if Current(rd, decode(t, gameDemo), stored) {
		t.Error("a secret is current for a ConfigMap")
	}
}

func TestDecide(t *testing.T) {
	rd := distribution(gameDemo)
	res := decode(t, gameDemo)
	stale := copyIn(rd, res, "ns-stale")
	stale.(*corev1.ConfigMap).Data = map[string]string{"edited": "by hand"}
	otherName := copyIn(rd, res, "ns-ok")
	otherName.SetName("renamed")
	in := Input{
		RD: rd, Resource: res, Now: now,
		Namespaces: namespaces(Namespace{Name: "ns-new"}, Namespace{Name: "ns-ok"}, Namespace{Name: "ns-stale"},
			Namespace{Name: "ns-conflict"}, Namespace{Name: "ns-gone", Terminating: true}, Namespace{Name: "ns-unread"},
			Namespace{Name: "ns-left"}, Namespace{Name: "ns-left-dying", Terminating: true}),
		Targets: []string{"ns-conflict", "ns-gone", "ns-missing", "ns-new", "ns-ok", "ns-stale", "ns-unread"},
		Existing: map[string]client.Object{
			"ns-ok": copyIn(rd, res, "ns-ok"), "ns-stale": stale, "ns-conflict": foreign("ns-conflict"),
		},
		ReadFailed: map[string]error{"ns-unread": errors.New("cache not synced")},
		Owned: []client.Object{copyIn(rd, res, "ns-ok"), stale, copyIn(rd, res, "ns-left"), copyIn(rd, res, "ns-left-dying"),
			copyIn(rd, res, "ns-vanished"), otherName},
	}
	p := Decide(in)
	if got := keys(p.Create); !slices.Equal(got, []string{"ns-new/game-demo"}) {
		t.Errorf("create %v", got)
	}
	if got := keys(p.Update); !slices.Equal(got, []string{"ns-stale/game-demo"}) {
		t.Errorf("update %v", got)
	}
	if got := keys(p.Delete); !slices.Equal(got, []string{"ns-left/game-demo", "ns-ok/renamed"}) {
		t.Errorf("delete %v", got)
	}
	if u := p.Update[0].(*corev1.ConfigMap); u.Data["player_initial_lives"] != "3" || u.Data["edited"] != "" || u.ResourceVersion != "7" {
		t.Errorf("the update does not restore the copy: %+v", u)
	}
	want := []Failure{
		{"ns-conflict", kruiseappsv1alpha1.ResourceDistributionConflictOccurred, ConflictReason},
		{"ns-gone", kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, NotExistsReason},
		{"ns-missing", kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, NotExistsReason},
		{"ns-unread", kruiseappsv1alpha1.ResourceDistributionGetResourceFailed, "cache not synced"},
	}
	if diff := cmp.Diff(want, p.Failures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

// Nothing to do once every copy is current; a conflicting object is never written, whoever owns it.
func TestDecideSettled(t *testing.T) {
	rd := distribution(gameDemo)
	res := decode(t, gameDemo)
	other := copyIn(distribution(gameDemo), res, "ns-2")
	other.GetOwnerReferences()[0].Name = "another"
	in := Input{RD: rd, Resource: res, Now: now, Namespaces: namespaces(Namespace{Name: "ns-1"}, Namespace{Name: "ns-2"}),
		Targets: []string{"ns-1", "ns-2"}, Existing: map[string]client.Object{"ns-1": copyIn(rd, res, "ns-1"), "ns-2": other},
		Owned: []client.Object{copyIn(rd, res, "ns-1")}}
	p := Decide(in)
	if len(p.Create)+len(p.Update)+len(p.Delete) > 0 || len(p.Failures) != 1 || p.Failures[0].Namespace != "ns-2" {
		t.Errorf("plan %+v", p)
	}
}
