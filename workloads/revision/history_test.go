package revision

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func revWithData(name string, number int64, data string) *appsv1.ControllerRevision {
	r := rev(name, number, time.Unix(1000, 0))
	r.Data.Raw = []byte(data)
	return r
}

func TestResolveUpdate(t *testing.T) {
	fresh := revWithData("cs-new", 4, `{"v":"new"}`)
	cases := []struct {
		name       string
		existing   []*appsv1.ControllerRevision
		fresh      *appsv1.ControllerRevision
		wantName   string
		wantNumber int64
		wantAction Action
		wantErr    error
	}{{
		name: "empty history: create", fresh: fresh,
		wantName: "cs-new", wantNumber: 4, wantAction: Create,
	}, {
		name:     "template changed: create",
		existing: []*appsv1.ControllerRevision{revWithData("cs-a", 1, `{"v":"a"}`), revWithData("cs-b", 2, `{"v":"b"}`)},
		fresh:    fresh, wantName: "cs-new", wantNumber: 4, wantAction: Create,
	}, {
		name:     "newest revision has the template: reuse it",
		existing: []*appsv1.ControllerRevision{revWithData("cs-new", 3, `{"v":"new"}`), revWithData("cs-a", 1, `{"v":"a"}`)},
		fresh:    fresh, wantName: "cs-new", wantNumber: 3, wantAction: Reuse,
	}, {
		name:     "an older revision has the template (rollback): renumber it as the newest",
		existing: []*appsv1.ControllerRevision{revWithData("cs-old", 1, `{"v": "new"}`), revWithData("cs-b", 2, `{"v":"b"}`)},
		fresh:    fresh, wantName: "cs-old", wantNumber: 3, wantAction: Renumber,
	}, {
		name:     "equal data under another name (built with another collision count) is reused",
		existing: []*appsv1.ControllerRevision{revWithData("cs-other", 2, `{"v":"new"}`)},
		fresh:    fresh, wantName: "cs-other", wantNumber: 2, wantAction: Reuse,
	}, {
		name:     "same name, other data: hash collision",
		existing: []*appsv1.ControllerRevision{revWithData("cs-new", 1, `{"v":"other"}`), revWithData("cs-b", 2, `{"v":"b"}`)},
		fresh:    fresh, wantErr: ErrHashCollision,
	}, {
		name:    "no fresh revision",
		wantErr: ErrNilRevision,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before []*appsv1.ControllerRevision
			for _, r := range tc.existing {
				before = append(before, r.DeepCopy())
			}
			got, err := ResolveUpdate(tc.existing, tc.fresh)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(before, tc.existing); diff != "" {
				t.Errorf("existing revisions were modified:\n%s", diff)
			}
			if err != nil {
				return
			}
			if got.Revision.Name != tc.wantName || got.Revision.Revision != tc.wantNumber || got.Action != tc.wantAction {
				t.Errorf("got %s #%d %s, want %s #%d %s", got.Revision.Name, got.Revision.Revision, got.Action,
					tc.wantName, tc.wantNumber, tc.wantAction)
			}
		})
	}
}

func TestToTruncate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	history := []*appsv1.ControllerRevision{
		rev("cs-e", 5, t0), rev("cs-a", 1, t0), rev("cs-c", 3, t0), nil, rev("cs-b", 2, t0), rev("cs-d", 4, t0),
	}
	cases := []struct {
		name  string
		live  sets.Set[string]
		limit int32
		want  []string
	}{
		{"within the limit", sets.New("cs-e"), 4, nil},
		{"oldest non-live revisions beyond the limit", sets.New("cs-e"), 2, []string{"cs-a", "cs-b"}},
		{"live revisions are never deleted", sets.New("cs-a", "cs-e"), 1, []string{"cs-b", "cs-c"}},
		{"a bare hash keeps the revision ending in it", sets.New("a", "cs-e"), 1, []string{"cs-b", "cs-c"}},
		{"limit 0 deletes every non-live revision", sets.New("cs-d", "cs-e"), 0, []string{"cs-a", "cs-b", "cs-c"}},
		{"a negative limit counts as 0", sets.New("cs-d", "cs-e"), -3, []string{"cs-a", "cs-b", "cs-c"}},
		{"no live set", nil, 3, []string{"cs-a", "cs-b"}},
	}
	for _, tc := range cases {
		got := ToTruncate(history, tc.live, tc.limit)
		if diff := cmp.Diff(tc.want, namesOrNil(got)); diff != "" {
			t.Errorf("%s: ToTruncate (-want +got):\n%s", tc.name, diff)
		}
	}
	if history[0].Name != "cs-e" || history[3] != nil {
		t.Error("ToTruncate reordered its input")
	}
}

func namesOrNil(revisions []*appsv1.ControllerRevision) []string {
	if len(revisions) == 0 {
		return nil
	}
	return names(revisions)
}

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{Reuse: "Reuse", Renumber: "Renumber", Create: "Create", Action(9): "Action(9)"} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %s, want %s", int(a), got, want)
		}
	}
}
