package admission

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// defaultRevisionHistoryLimit is upstream's number of ControllerRevisions kept per SidecarSet.
const defaultRevisionHistoryLimit = 10

// Default applies upstream's defaults to a SidecarSet, on create and on every update alike (old is unused:
// upstream defaults the whole object each time), then sets its kruise.io/sidecarset-hash and
// kruise.io/sidecarset-hash-without-image annotations from the defaulted containers. Pods injected by
// upstream carry hashes computed the same way, so they stay current. Applying it again changes nothing; a
// nil SidecarSet is left alone.
func Default(set, _ *kruiseappsv1alpha1.SidecarSet) {
	if set == nil {
		return
	}
	s := &set.Spec
	defaultUpdateStrategy(&s.UpdateStrategy)
	for i := range s.InitContainers {
		defaultSidecar(&s.InitContainers[i], kruiseappsv1alpha1.AfterAppContainerType)
	}
	for i := range s.Containers {
		defaultSidecar(&s.Containers[i], kruiseappsv1alpha1.BeforeAppContainerType)
	}
	podtemplate.DefaultVolumes(s.Volumes)
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](defaultRevisionHistoryLimit)
	}
	for i := range s.PatchPodMetadata {
		if s.PatchPodMetadata[i].PatchPolicy == "" {
			s.PatchPodMetadata[i].PatchPolicy = kruiseappsv1alpha1.SidecarSetRetainPatchPolicy
		}
	}
	if r := s.InjectionStrategy.Revision; r != nil && r.Policy == "" {
		r.Policy = kruiseappsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy
	}
	setHashes(set)
}

// defaultUpdateStrategy: RollingUpdate, one pod unavailable at a time, no partition.
func defaultUpdateStrategy(u *kruiseappsv1alpha1.SidecarSetUpdateStrategy) {
	if u.Type == "" {
		u.Type = kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType
	}
	if u.MaxUnavailable == nil {
		u.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if u.Partition == nil {
		u.Partition = ptr.To(intstr.FromInt32(0))
	}
}

// defaultSidecar: the inject policy given (init containers go after the pod's own), a cold upgrade, no
// volume sharing, and the container defaults upstream applies to sidecars.
func defaultSidecar(c *kruiseappsv1alpha1.SidecarContainer, policy kruiseappsv1alpha1.PodInjectPolicyType) {
	if c.PodInjectPolicy == "" {
		c.PodInjectPolicy = policy
	}
	if c.UpgradeStrategy.UpgradeType == "" {
		c.UpgradeStrategy.UpgradeType = kruiseappsv1alpha1.SidecarContainerColdUpgrade
	}
	if c.ShareVolumePolicy.Type == "" {
		c.ShareVolumePolicy.Type = kruiseappsv1alpha1.ShareVolumePolicyDisabled
	}
	podtemplate.DefaultSidecarContainer(&c.Container)
	for i := range c.TransferEnv {
		if from := c.TransferEnv[i].SourceContainerNameFrom; from != nil {
			podtemplate.DefaultFieldRef(from.FieldRef)
		}
	}
}

// setHashes writes both hash annotations. Hashing marshals plain containers to JSON, which cannot fail; were
// it to, the annotations are left as they are rather than refusing the SidecarSet.
func setHashes(set *kruiseappsv1alpha1.SidecarSet) {
	hash, err := inject.Hash(set)
	if err != nil {
		return
	}
	withoutImage, err := inject.HashWithoutImage(set)
	if err != nil {
		return
	}
	if set.Annotations == nil {
		set.Annotations = map[string]string{}
	}
	set.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation] = hash
	set.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation] = withoutImage
}
