// Package history keeps a SidecarSet's ControllerRevisions as upstream does: in the manager's namespace
// (a SidecarSet has none), labelled with the SidecarSet's name, each recording the sidecar part of the
// spec as a replacing strategic merge patch, so that injectionStrategy.revision can inject an older one.
package history

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// NameLabel on a ControllerRevision names its SidecarSet.
const NameLabel = "kruise.io/sidecarset-name"

// recordedFields are the spec fields a revision records.
var recordedFields = []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"}

// Selector selects the revisions of the SidecarSet named name.
func Selector(name string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{NameLabel: name})
}

// Data is what a revision of set records: {"spec": {"$patch": "replace", <recordedFields>}}.
func Data(set *kruiseappsv1alpha1.SidecarSet) ([]byte, error) {
	encoded, err := json.Marshal(set.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding SidecarSet %s: %w", set.Name, err)
	}
	spec := map[string]any{}
	if err := json.Unmarshal(encoded, &spec); err != nil {
		return nil, fmt.Errorf("encoding SidecarSet %s: %w", set.Name, err)
	}
	recorded := map[string]any{"$patch": "replace"}
	for _, f := range recordedFields {
		recorded[f] = spec[f] // absent fields record null, as upstream's do
	}
	return json.Marshal(map[string]any{"spec": recorded})
}

// New builds the revision number rev of set in namespace, carrying set's labels and annotations (its
// hashes among them) and NameLabel.
func New(set *kruiseappsv1alpha1.SidecarSet, namespace string, rev int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := Data(set)
	if err != nil {
		return nil, err
	}
	r, err := revision.New(set, kruiseappsv1alpha1.GroupVersion.WithKind("SidecarSet"), set.Labels, data, rev, collisionCount)
	if err != nil {
		return nil, err
	}
	r.Namespace = namespace
	r.Labels[NameLabel] = set.Name
	return r, nil
}

// Restore is set as revision r recorded it: the recorded fields replaced, the hashes those of r (or
// computed when r lacks them), status.latestRevision r's name.
func Restore(set *kruiseappsv1alpha1.SidecarSet, r *appsv1.ControllerRevision) (*kruiseappsv1alpha1.SidecarSet, error) {
	current, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("encoding SidecarSet %s: %w", set.Name, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(current, r.Data.Raw, &kruiseappsv1alpha1.SidecarSet{})
	if err != nil {
		return nil, fmt.Errorf("applying revision %s to SidecarSet %s: %w", r.Name, set.Name, err)
	}
	out := &kruiseappsv1alpha1.SidecarSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, fmt.Errorf("decoding revision %s of SidecarSet %s: %w", r.Name, set.Name, err)
	}
	if err := restoreHashes(out, r); err != nil {
		return nil, err
	}
	out.Status.LatestRevision = r.Name
	return out, nil
}

func restoreHashes(set *kruiseappsv1alpha1.SidecarSet, r *appsv1.ControllerRevision) error {
	if set.Annotations == nil {
		set.Annotations = map[string]string{}
	}
	for key, compute := range map[string]func(*kruiseappsv1alpha1.SidecarSet) (string, error){
		kruiseappsv1alpha1.SidecarSetHashAnnotation:             inject.Hash,
		kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation: inject.HashWithoutImage,
	} {
		if v := r.Annotations[key]; v != "" {
			set.Annotations[key] = v
			continue
		}
		v, err := compute(set)
		if err != nil {
			return err
		}
		set.Annotations[key] = v
	}
	return nil
}
