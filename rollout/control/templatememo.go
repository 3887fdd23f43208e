package control

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/workloads/memo"
)

// Every reconcile of a release, and of the Advanced Deployment controller, compares each ReplicaSet's template
// with its Deployment's and may hash the Deployment's; both walk the templates whole. A template changes only
// with its object's spec, which bumps the object's generation, so an answer holds for the UIDs at the
// generations. The memos are for objects as stored: one being admitted carries its old generation with its
// new spec (admission code compares templates itself). Objects without a UID or generation (built in memory)
// are always computed.
var (
	newTemplates      = memo.New[templatePair, bool](templateMemoSize)
	templateHashes    = memo.New[templateOf, string](templateMemoSize)
	recordedTemplates = memo.New[revisionPair, bool](templateMemoSize)
)

const templateMemoSize = 8192

type templatePair struct {
	rs, d       types.UID
	rsGen, dGen int64
}

type templateOf struct {
	d         types.UID
	gen       int64
	collision int32
}

// isNewReplicaSet reports whether rs's template is d's, ignoring the hash and batch labels.
func isNewReplicaSet(rs *appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	equal := func() bool { return EqualIgnoreHashAndBatch(&rs.Spec.Template, &d.Spec.Template) }
	if !stored(rs.UID, rs.Generation) || !stored(d.UID, d.Generation) {
		return equal()
	}
	return newTemplates.Get(templatePair{rs: rs.UID, d: d.UID, rsGen: rs.Generation, dGen: d.Generation}, equal)
}

// templateHash is ComputeHash of d's template and collision count.
func templateHash(d *appsv1.Deployment) string {
	hash := func() string { return ComputeHash(&d.Spec.Template, d.Status.CollisionCount) }
	if !stored(d.UID, d.Generation) {
		return hash()
	}
	return templateHashes.Get(templateOf{d: d.UID, gen: d.Generation, collision: ptr.Deref(d.Status.CollisionCount, 0)}, hash)
}

// revisionPair is a ControllerRevision, whose data the API server keeps immutable, and its DaemonSet's
// template at a generation.
type revisionPair struct {
	cr, ds types.UID
	dsGen  int64
}

// recordsDaemonSetTemplate reports whether the revision cr records ds's template; it decodes the revision's
// data only once for a DaemonSet's generation.
func recordsDaemonSetTemplate(cr *appsv1.ControllerRevision, ds *appsv1.DaemonSet) bool {
	records := func() bool { return recordsTemplate(cr, &ds.Spec.Template) }
	if cr.UID == "" || !stored(ds.UID, ds.Generation) {
		return records()
	}
	return recordedTemplates.Get(revisionPair{cr: cr.UID, ds: ds.UID, dsGen: ds.Generation}, records)
}

func stored(uid types.UID, generation int64) bool {
	return uid != "" && generation > 0
}
