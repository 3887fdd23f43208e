package revision

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/fnv"
	"maps"
	"reflect"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ErrNilOwner is returned for a revision without an owner.
var ErrNilOwner = errors.New("revision: nil owner")

const (
	// HashLabel is the label the Kubernetes controller history puts the revision hash in.
	HashLabel = "controller.kubernetes.io/hash"
	// maxPrefixLength keeps a revision name within the 253 characters of a DNS subdomain name.
	maxPrefixLength = 223
)

// Hash is the Kubernetes controller history hash of revision data: FNV-1 (32 bit) over the data and, when
// collisionCount is set, its decimal digits, encoded with rand.SafeEncodeString. Upstream always passes a
// count (0 while the workload's status.collisionCount is unset).
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	_, _ = h.Write(data) // a hash.Hash never returns an error
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// Name is the name of the owner's revision with the given hash: "<owner>-<hash>", the owner name cut to 223
// characters.
func Name(owner, hash string) string {
	if len(owner) > maxPrefixLength {
		owner = owner[:maxPrefixLength]
	}
	return owner + "-" + hash
}

// New builds the revision upstream creates for data: named after the owner and the hash of data and
// collisionCount, in the owner's namespace, labelled with the template labels plus the hash, carrying the
// owner's annotations, controlled by the owner. Build data with TemplatePatch and revision with Next.
func New(owner metav1.Object, ownerGVK schema.GroupVersionKind, templateLabels map[string]string, data []byte,
	revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	return NewHashed(owner, ownerGVK, templateLabels, data, revision, HashLabel, Hash(data, collisionCount))
}

// isNil also catches a nil pointer wrapped in the interface, whose methods would dereference it.
func isNil(owner metav1.Object) bool {
	if owner == nil {
		return true
	}
	v := reflect.ValueOf(owner)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// Equal reports whether two revisions record the same data: identical bytes or the same JSON value (so a
// revision whose data was re-encoded still matches).
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	if bytes.Equal(a.Data.Raw, b.Data.Raw) {
		return true
	}
	var av, bv any
	if json.Unmarshal(a.Data.Raw, &av) != nil || json.Unmarshal(b.Data.Raw, &bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}

// Next is the revision number a new revision gets: one more than the highest, 1 for an empty history.
func Next(revisions []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revisions {
		if r != nil && r.Revision > highest {
			highest = r.Revision
		}
	}
	return highest + 1
}

// Sort orders revisions oldest first, in place: by revision number, then creation time, then name. Nil
// entries go first.
func Sort(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool { return older(revisions[i], revisions[j]) })
}

func older(a, b *appsv1.ControllerRevision) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b != nil
	case a.Revision != b.Revision:
		return a.Revision < b.Revision
	case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	default:
		return a.Name < b.Name
	}
}
