package revision

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var cloneSetGVK = kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")

func TestHash(t *testing.T) {
	data := []byte(nginxData)
	cases := []struct {
		name  string
		data  []byte
		count *int32
		want  string
	}{
		{"upstream's nginx revision (collision count 0)", data, ptr.To[int32](0), "56bb68c858"},
		{"the count is hashed as decimal digits after the data", data, ptr.To[int32](12), Hash([]byte(nginxData+"12"), nil)},
		{"a negative count keeps its sign", data, ptr.To[int32](-1), Hash([]byte(nginxData+"-1"), nil)},
		{"no count hashes the data alone", []byte(nginxData + "0"), nil, "56bb68c858"},
	}
	for _, tc := range cases {
		if got := Hash(tc.data, tc.count); got != tc.want {
			t.Errorf("%s: Hash = %s, want %s", tc.name, got, tc.want)
		}
	}
	if Hash(data, nil) == Hash(data, ptr.To[int32](0)) {
		t.Error("Hash with no collision count equals Hash with count 0")
	}
}

func TestName(t *testing.T) {
	long := strings.Repeat("a", 250)
	cases := []struct{ owner, want string }{
		{"nginx", "nginx-56bb68c858"},
		{long[:223], long[:223] + "-56bb68c858"},
		{long, long[:223] + "-56bb68c858"},
	}
	for _, tc := range cases {
		if got := Name(tc.owner, "56bb68c858"); got != tc.want {
			t.Errorf("Name(%d chars) = %s, want %s", len(tc.owner), got, tc.want)
		}
	}
}

func cloneSet(annotations map[string]string) *kruiseappsv1alpha1.CloneSet {
	return &kruiseappsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{
		Name: "nginx", Namespace: "default", UID: "uid-1", Annotations: annotations,
	}}
}

func TestNew(t *testing.T) {
	data, err := TemplatePatch(nginxTemplate())
	if err != nil {
		t.Fatal(err)
	}
	owner := []metav1.OwnerReference{{
		APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "nginx", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	cases := []struct {
		name        string
		annotations map[string]string
		count       int32
		want        *appsv1.ControllerRevision
	}{{
		name: "upstream's nginx revision",
		want: &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: "nginx-56bb68c858", Namespace: "default", OwnerReferences: owner,
				Labels: map[string]string{"app": "nginx", HashLabel: "56bb68c858"},
			},
			Data: runtime.RawExtension{Raw: data}, Revision: 3,
		},
	}, {
		name:        "owner annotations are copied, a collision count changes the name",
		annotations: map[string]string{"a": "b"},
		count:       1,
		want: &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: "nginx-" + Hash(data, ptr.To[int32](1)), Namespace: "default", OwnerReferences: owner,
				Labels:      map[string]string{"app": "nginx", HashLabel: Hash(data, ptr.To[int32](1))},
				Annotations: map[string]string{"a": "b"},
			},
			Data: runtime.RawExtension{Raw: data}, Revision: 3,
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{"app": "nginx"}
			cs := cloneSet(tc.annotations)
			got, err := New(cs, cloneSetGVK, labels, data, 3, ptr.To(tc.count))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("New (-want +got):\n%s", diff)
			}
			got.Labels["x"] = "changed"
			if got.Annotations != nil {
				got.Annotations["y"] = "changed"
			}
			if len(labels) != 1 || len(cs.Annotations) != len(tc.annotations) {
				t.Error("New shares its label or annotation maps with its inputs")
			}
		})
	}
}

func TestNewNilOwner(t *testing.T) {
	for name, owner := range map[string]metav1.Object{"nil": nil, "typed nil": (*kruiseappsv1alpha1.CloneSet)(nil)} {
		if _, err := New(owner, cloneSetGVK, nil, nil, 1, nil); !errors.Is(err, ErrNilOwner) {
			t.Errorf("%s owner: error = %v, want ErrNilOwner", name, err)
		}
	}
}

func withData(data string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(data)}}
}

func TestEqual(t *testing.T) {
	cases := []struct {
		name string
		a, b *appsv1.ControllerRevision
		want bool
	}{
		{"both nil", nil, nil, true},
		{"one nil", withData(`{}`), nil, false},
		{"same bytes", withData(nginxData), withData(nginxData), true},
		{"same JSON, other key order and spacing", withData(`{"a":1,"b":[true,null]}`), withData(`{ "b": [true, null], "a": 1.0 }`), true},
		{"other data", withData(`{"a":1}`), withData(`{"a":2}`), false},
		{"both empty", withData(``), withData(``), true},
		{"same invalid bytes", withData(`{`), withData(`{`), true},
		{"invalid against valid", withData(`{`), withData(`{}`), false},
	}
	for _, tc := range cases {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Equal = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func rev(name string, number int64, created time.Time) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Revision:   number,
	}
}

func names(revisions []*appsv1.ControllerRevision) []string {
	out := make([]string, 0, len(revisions))
	for _, r := range revisions {
		if r == nil {
			out = append(out, "<nil>")
			continue
		}
		out = append(out, r.Name)
	}
	return out
}

func TestNext(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name      string
		revisions []*appsv1.ControllerRevision
		want      int64
	}{
		{"empty history", nil, 1},
		{"unsorted", []*appsv1.ControllerRevision{rev("c", 3, t0), rev("a", 1, t0), rev("b", 2, t0)}, 4},
		{"nil entries are skipped", []*appsv1.ControllerRevision{nil, rev("a", 5, t0)}, 6},
	}
	for _, tc := range cases {
		if got := Next(tc.revisions); got != tc.want {
			t.Errorf("%s: Next = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSort(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	cases := []struct {
		name      string
		revisions []*appsv1.ControllerRevision
		want      []string
	}{
		{"by revision number", []*appsv1.ControllerRevision{rev("c", 3, t0), rev("a", 1, t1), rev("b", 2, t0)}, []string{"a", "b", "c"}},
		{"ties by creation time", []*appsv1.ControllerRevision{rev("a", 1, t1), rev("b", 1, t0)}, []string{"b", "a"}},
		{"then by name", []*appsv1.ControllerRevision{rev("b", 1, t0), rev("a", 1, t0)}, []string{"a", "b"}},
		{"nil entries first", []*appsv1.ControllerRevision{rev("a", 1, t0), nil}, []string{"<nil>", "a"}},
	}
	for _, tc := range cases {
		Sort(tc.revisions)
		if diff := cmp.Diff(tc.want, names(tc.revisions)); diff != "" {
			t.Errorf("%s: Sort (-want +got):\n%s", tc.name, diff)
		}
	}
}
