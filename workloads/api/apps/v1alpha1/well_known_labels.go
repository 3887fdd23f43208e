package v1alpha1

// Labels, annotations and env names of apps.kruise.io that are not tied to one kind's file. Pod-level
// mechanisms shared by several kinds (lifecycle, in-place update, readiness gates, launch priority) live
// in workloads/api/apps/pub; the apps.kruise.io/deletion-protection finalizer is DeletionProtectionFinalizer.

const (
	// ControllerRevisionHashLabelKey records the UnitedDeployment revision on its subset workloads (other
	// workloads use the standard "controller-revision-hash" key on their pods).
	ControllerRevisionHashLabelKey = "apps.kruise.io/controller-revision-hash"

	// SubSetNameLabelKey records the UnitedDeployment subset a workload or pod belongs to.
	SubSetNameLabelKey = "apps.kruise.io/subset-name"

	// ReservedPodLabelKey marks a pod kept by the adaptive UnitedDeployment strategy while unschedulable.
	ReservedPodLabelKey = "apps.kruise.io/united-deployment-reserved-pod"

	// AnnotationSubsetPatchKey records, on a subset workload, the subset patch applied to it.
	AnnotationSubsetPatchKey = "apps.kruise.io/subset-patch"

	// SpecifiedDeleteKey is a pod label asking its workload to delete (or recreate) the pod; the value
	// may carry a deletion option.
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"
)

// Image pre-download of in-place updates (CloneSet, Advanced StatefulSet and DaemonSet).
const (
	// ImagePreDownloadCreatedKey labels a ControllerRevision whose images pre-download jobs were created.
	ImagePreDownloadCreatedKey = "apps.kruise.io/pre-predownload-created"
	// ImagePreDownloadIgnoredKey labels a ControllerRevision whose images are not pre-downloaded.
	ImagePreDownloadIgnoredKey = "apps.kruise.io/image-predownload-ignored"

	// ImagePreDownloadParallelismKey is a workload annotation: how many nodes pull at once (default 1).
	ImagePreDownloadParallelismKey = "apps.kruise.io/image-predownload-parallelism"
	// ImagePreDownloadTimeoutSecondsKey is a workload annotation: the pull timeout (default 300).
	ImagePreDownloadTimeoutSecondsKey = "apps.kruise.io/image-predownload-timeout-seconds"
	// ImagePreDownloadMinUpdatedReadyPods is a workload annotation: how many updated pods must be ready
	// before the pre-download starts.
	ImagePreDownloadMinUpdatedReadyPods = "apps.kruise.io/image-predownload-min-updated-ready-pods"
)

const (
	// AnnotationUsingEnhancedLiveness marks a pod whose liveness probes are run by the node agent
	// instead of kubelet.
	AnnotationUsingEnhancedLiveness = "apps.kruise.io/using-enhanced-liveness"
	// AnnotationNativeContainerProbeContext keeps, as JSON, the liveness probes removed from the pod's
	// containers for AnnotationUsingEnhancedLiveness.
	AnnotationNativeContainerProbeContext = "apps.kruise.io/container-probe-context"
)

// Env names a Job pod's sidecar containers set to be stopped when the main containers exit.
const (
	// KruiseTerminateSidecarEnv set to "true" stops the sidecar (through a ContainerRecreateRequest).
	KruiseTerminateSidecarEnv = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT"
	// KruiseTerminateSidecarWithImageEnv names an image that replaces the sidecar's image in place to
	// stop it, for runtimes where killing the container is not enough.
	KruiseTerminateSidecarWithImageEnv = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE"
	// KruiseIgnoreContainerExitCodeEnv set to "true" ignores the sidecar's exit code when judging the
	// pod's success.
	KruiseIgnoreContainerExitCodeEnv = "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE"
)
