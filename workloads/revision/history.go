package revision

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrHashCollision means an existing revision has the new revision's name but other data. The caller must
// increment the workload's status.collisionCount, persist it, and build the revision again: the count is
// part of the hash, so the next name differs.
var ErrHashCollision = errors.New("revision: hash collision")

// ErrNilRevision is returned when there is no freshly built revision to resolve.
var ErrNilRevision = errors.New("revision: nil revision")

// Action is what the caller must write to make Update.Revision the update revision.
type Action int

const (
	// Reuse means the newest existing revision already records the template: nothing to write.
	Reuse Action = iota
	// Renumber means an older revision records the template (a rollback): update it, as returned, with the
	// next revision number so that it becomes the newest.
	Renumber
	// Create means no revision records the template: create the returned one.
	Create
)

// String names the action for logs and test failures.
func (a Action) String() string {
	switch a {
	case Reuse:
		return "Reuse"
	case Renumber:
		return "Renumber"
	case Create:
		return "Create"
	default:
		return fmt.Sprintf("Action(%d)", int(a))
	}
}

// Update is the update revision and what the caller must write for it.
type Update struct {
	Revision *appsv1.ControllerRevision
	Action   Action
}

// ResolveUpdate picks the update revision for a freshly built one (see New), as upstream does: an existing
// revision with equal data wins over a new one. For Reuse the result is the existing object itself (do not
// modify it); for Renumber and Create it is a copy to write. The inputs are never modified. If the create later fails because the name exists (a stale cache), add the
// fetched revision to existing and resolve again.
func ResolveUpdate(existing []*appsv1.ControllerRevision, fresh *appsv1.ControllerRevision) (Update, error) {
	if fresh == nil {
		return Update{}, ErrNilRevision
	}
	sorted := sortedNonNil(existing)
	if i := lastEqual(sorted, fresh); i >= 0 {
		if i == len(sorted)-1 {
			return Update{Revision: sorted[i], Action: Reuse}, nil
		}
		renumbered := sorted[i].DeepCopy()
		renumbered.Revision = Next(sorted)
		return Update{Revision: renumbered, Action: Renumber}, nil
	}
	for _, r := range sorted {
		if r.Name == fresh.Name {
			return Update{}, fmt.Errorf("%w: revision %s exists with other data", ErrHashCollision, r.Name)
		}
	}
	return Update{Revision: fresh.DeepCopy(), Action: Create}, nil
}

func lastEqual(sorted []*appsv1.ControllerRevision, fresh *appsv1.ControllerRevision) int {
	for i := len(sorted) - 1; i >= 0; i-- {
		if Equal(sorted[i], fresh) {
			return i
		}
	}
	return -1
}

// ToTruncate returns the revisions to delete, oldest first, so that at most limit revisions remain that are
// not live. live holds the names of revisions in use: the current and update revisions and the
// controller-revision-hash label of every pod; a bare hash there (upstream's CloneSetShortHash) keeps the
// revision whose name ends in it. A negative limit counts as 0.
func ToTruncate(revisions []*appsv1.ControllerRevision, live sets.Set[string], limit int32) []*appsv1.ControllerRevision {
	var history []*appsv1.ControllerRevision
	for _, r := range sortedNonNil(revisions) {
		if !isLive(r.Name, live) {
			history = append(history, r)
		}
	}
	excess := len(history) - int(max(limit, 0))
	if excess <= 0 {
		return nil
	}
	return history[:excess]
}

func isLive(name string, live sets.Set[string]) bool {
	if live.Has(name) {
		return true
	}
	i := strings.LastIndex(name, "-")
	return i >= 0 && i < len(name)-1 && live.Has(name[i+1:])
}

// sortedNonNil returns the revisions without nil entries, oldest first, leaving the input untouched.
func sortedNonNil(revisions []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	out := slices.DeleteFunc(slices.Clone(revisions), func(r *appsv1.ControllerRevision) bool { return r == nil })
	Sort(out)
	return out
}
