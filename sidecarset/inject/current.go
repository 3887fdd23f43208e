package inject

import kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"

// Hashes are a SidecarSet's two hashes.
type Hashes struct {
	Hash, WithoutImage string
}

// CurrentHashes are the hashes set's webhook recorded in its annotations, computed where one is missing
// (a SidecarSet created while the webhook was not served).
func CurrentHashes(set *kruiseappsv1alpha1.SidecarSet) (Hashes, error) {
	h := Hashes{
		Hash:         set.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation],
		WithoutImage: set.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation],
	}
	var err error
	if h.Hash == "" {
		if h.Hash, err = Hash(set); err != nil {
			return Hashes{}, err
		}
	}
	if h.WithoutImage == "" {
		h.WithoutImage, err = HashWithoutImage(set)
	}
	return h, err
}
