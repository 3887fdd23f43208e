package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// tokenExpirationSeconds is the default lifetime of a projected service account token: one hour.
const tokenExpirationSeconds = 3600

// DefaultVolumes applies a pod template's volume defaults to volumes, as upstream does to a SidecarSet's.
func DefaultVolumes(volumes []corev1.Volume) {
	for i := range volumes {
		defaultVolume(&volumes[i])
	}
}

func defaultVolume(v *corev1.Volume) {
	if v.VolumeSource == (corev1.VolumeSource{}) {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if v.HostPath != nil && v.HostPath.Type == nil {
		v.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if v.Secret != nil {
		defaultMode(&v.Secret.DefaultMode)
	}
	if v.ConfigMap != nil {
		defaultMode(&v.ConfigMap.DefaultMode)
	}
	if v.DownwardAPI != nil {
		defaultMode(&v.DownwardAPI.DefaultMode)
		defaultDownwardAPIItems(v.DownwardAPI.Items)
	}
	if v.Projected != nil {
		defaultProjected(v.Projected)
	}
}

func defaultProjected(p *corev1.ProjectedVolumeSource) {
	defaultMode(&p.DefaultMode)
	for i := range p.Sources {
		src := &p.Sources[i]
		if src.DownwardAPI != nil {
			defaultDownwardAPIItems(src.DownwardAPI.Items)
		}
		if tok := src.ServiceAccountToken; tok != nil && tok.ExpirationSeconds == nil {
			tok.ExpirationSeconds = ptr.To[int64](tokenExpirationSeconds)
		}
	}
}

func defaultDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		defaultFieldRef(items[i].FieldRef)
	}
}

// defaultMode sets the file mode of a secret, configMap, downwardAPI or projected volume: the four share 0644.
func defaultMode(mode **int32) {
	if *mode == nil {
		*mode = ptr.To[int32](corev1.ConfigMapVolumeSourceDefaultMode)
	}
}
