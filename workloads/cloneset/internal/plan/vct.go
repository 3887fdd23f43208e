package plan

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/dump"
)

// VCTHashAnnotation records on each CloneSet revision the hash of the volumeClaimTemplates in force when it
// was created, as upstream does; with RecreatePodWhenChangeVCTInCloneSetGate a pod whose revision's hash
// differs from the update revision's is recreated (new claims) instead of updated in place.
const VCTHashAnnotation = "kruise.io/cloneset-volumeclaimtemplate-hash"

// VCTHash is upstream's hash of volumeClaimTemplates: FNV-32a over the hash dump of their JSON, sorted by
// name, in decimal; empty without templates. Matching it keeps revisions written by upstream comparable.
func VCTHash(templates []corev1.PersistentVolumeClaim) string {
	if len(templates) == 0 {
		return ""
	}
	sorted := slices.Clone(templates)
	slices.SortFunc(sorted, func(a, b corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.Marshal(sorted)
	if err != nil {
		return ""
	}
	h := fnv.New32a()
	_, _ = fmt.Fprintf(h, "%v", dump.ForHash(data))
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// VCTAllowsInPlace reports whether the volumeClaimTemplates recorded on a pod's revision (from) and on the
// update revision (to) let the pod be updated in place: when both revisions record a hash (empty meaning no
// templates), they must be equal. A revision without the annotation (written before it existed) never calls
// for a recreate, so turning the gate on does not recreate every pod at the next update.
func VCTAllowsInPlace(from, to map[string]string) bool {
	a, fromOK := from[VCTHashAnnotation]
	b, toOK := to[VCTHashAnnotation]
	return !fromOK || !toOK || a == b
}
