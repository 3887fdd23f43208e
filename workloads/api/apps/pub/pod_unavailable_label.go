package pub

import "strings"

// PubUnavailablePodLabelPrefix: a pod carrying any label with this prefix counts as unavailable for
// workloads and PodUnavailableBudget even while it is Ready (used for graceful offline).
const PubUnavailablePodLabelPrefix = "unavailable-pod.kruise.io/"

// HasUnavailableLabel reports whether labels contain a PubUnavailablePodLabelPrefix key.
func HasUnavailableLabel(labels map[string]string) bool {
	for key := range labels {
		if strings.HasPrefix(key, PubUnavailablePodLabelPrefix) {
			return true
		}
	}
	return false
}
