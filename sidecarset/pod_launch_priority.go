package sidecarset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/sidecarset/launchpriority"
)

// generatedSuffixLength and maxGeneratedBase are the API server's: a generated name is its generateName,
// cut to leave room, and five random characters.
const (
	generatedSuffixLength = 5
	maxGeneratedBase      = 63 - generatedSuffixLength
)

// assignLaunchPriority is the pod webhook's container launch priority: it puts the containers of a new pod
// behind their barrier keys (launchpriority.Assign).
func assignLaunchPriority(ctx context.Context, pod *corev1.Pod) (bool, error) {
	changed, err := launchpriority.Assign(pod, generateName)
	if changed {
		logf.FromContext(ctx).V(1).Info("Set container launch priority", "pod", klog.KObj(pod))
	}
	return changed, err
}

// generateName completes base as the API server does for a pod with generateName only.
func generateName(base string) string {
	if len(base) > maxGeneratedBase {
		base = base[:maxGeneratedBase]
	}
	return base + rand.String(generatedSuffixLength)
}
