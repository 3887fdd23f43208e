package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// pending is the update that waits for inPlaceUpdateStrategy.gracePeriodSeconds, in the shape of upstream's
// apps.kruise.io/inplace-update-grace annotation, so that either controller can finish what the other began.
type pending struct {
	Revision              string            `json:"revision"`
	ContainerImages       map[string]string `json:"containerImages,omitempty"`
	MetaDataPatch         []byte            `json:"metaDataPatch,omitempty"`
	UpdateEnvFromMetadata bool              `json:"updateEnvFromMetadata,omitempty"`
	GraceSeconds          int32             `json:"graceSeconds"`
}

// metadataPatch is the strategic merge patch of the template's metadata; a null value removes the key.
type metadataPatch struct {
	Metadata struct {
		Labels      map[string]*string `json:"labels,omitempty"`
		Annotations map[string]*string `json:"annotations,omitempty"`
	} `json:"metadata"`
}

// Defer starts an update that waits graceSeconds before it touches the containers: the pod records the
// update state (so the kubelet's statuses from before are kept) and the pending change, and keeps its
// images until Resume. Callers mark the pod not ready first, so that traffic drains during the grace.
func Defer(pod *corev1.Pod, s *Spec, revision string, now metav1.Time, graceSeconds int32) error {
	raw, err := encodePending(s, revision, graceSeconds)
	if err != nil {
		return err
	}
	if err := writeState(pod, s, revision, now); err != nil {
		return err
	}
	pod.Annotations[kruiseappspub.InPlaceUpdateGraceKey] = raw
	return nil
}

// Deferred reads the update a pod holds back, and how long its grace still runs (0 or less: it is over).
// ok is false when the pod holds none.
func Deferred(pod *corev1.Pod, now time.Time) (s *Spec, left time.Duration, ok bool, err error) {
	raw, found := kruiseappspub.GetInPlaceUpdateGrace(pod)
	if !found {
		return nil, 0, false, nil
	}
	p := pending{}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, 0, true, fmt.Errorf("decode %s: %w", kruiseappspub.InPlaceUpdateGraceKey, err)
	}
	state, err := kruiseappspub.ParseInPlaceUpdateState(pod)
	if err != nil {
		return nil, 0, true, err
	}
	s, err = p.spec()
	if err != nil || state == nil {
		return s, 0, true, err
	}
	end := state.UpdateTimestamp.Add(time.Duration(p.GraceSeconds) * time.Second)
	return s, end.Sub(now), true, nil
}

// Resume applies a deferred update to the containers and metadata and drops the pending annotation.
func Resume(pod *corev1.Pod, s *Spec) {
	applySpec(pod, s)
	delete(pod.Annotations, kruiseappspub.InPlaceUpdateGraceKey)
	delete(pod.Annotations, kruiseappspub.InPlaceUpdateGraceKeyOld)
}

func encodePending(s *Spec, revision string, graceSeconds int32) (string, error) {
	meta, err := json.Marshal(s.metadataPatch())
	if err != nil {
		return "", fmt.Errorf("encode metadata patch: %w", err)
	}
	raw, err := json.Marshal(pending{Revision: revision, ContainerImages: s.ContainerImages, MetaDataPatch: meta,
		UpdateEnvFromMetadata: len(s.EnvFromMetadata) > 0, GraceSeconds: graceSeconds})
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", kruiseappspub.InPlaceUpdateGraceKey, err)
	}
	return string(raw), nil
}

func (s *Spec) metadataPatch() metadataPatch {
	var m metadataPatch
	m.Metadata.Labels = patchMap(s.Labels, s.RemovedLabels)
	m.Metadata.Annotations = patchMap(s.Annotations, s.RemovedAnnotations)
	return m
}

func patchMap(set map[string]string, removed []string) map[string]*string {
	out := map[string]*string{}
	for k, v := range set {
		out[k] = &v
	}
	for _, k := range removed {
		out[k] = nil
	}
	return out
}

// spec turns the pending annotation back into the change Resume applies. Whether env reads the metadata
// was recorded in the update state when the update began.
func (p pending) spec() (*Spec, error) {
	s := &Spec{ContainerImages: p.ContainerImages, Labels: map[string]string{}, Annotations: map[string]string{}}
	if len(p.MetaDataPatch) > 0 {
		var m metadataPatch
		if err := json.Unmarshal(p.MetaDataPatch, &m); err != nil {
			return nil, fmt.Errorf("decode metadata patch: %w", err)
		}
		s.RemovedLabels = splitPatch(m.Metadata.Labels, s.Labels)
		s.RemovedAnnotations = splitPatch(m.Metadata.Annotations, s.Annotations)
	}
	return s, nil
}

func splitPatch(patch map[string]*string, set map[string]string) (removed []string) {
	for k, v := range patch {
		if v == nil {
			removed = append(removed, k)
		} else {
			set[k] = *v
		}
	}
	return removed
}
