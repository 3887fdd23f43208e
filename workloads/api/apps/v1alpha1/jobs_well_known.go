package v1alpha1

// Labels, annotations, finalizers and names shared by the job-like kinds (BroadcastJob, AdvancedCronJob,
// ImagePullJob, ImageListPullJob, NodeImage) and the node agent.
const (
	// ScheduledAtAnnotationKey is set on each job an AdvancedCronJob creates to its scheduled time (RFC3339).
	ScheduledAtAnnotationKey = "apps.kruise.io/scheduled-at"

	// DeletionProtectionFinalizer is added by the defaulting webhook (to ImagePullJobs) so that the
	// resources the object spread elsewhere, such as copied pull secrets, are cleaned up before it goes.
	DeletionProtectionFinalizer = "apps.kruise.io/deletion-protection"

	// KruiseDaemonConfigNamespace is where ImagePullJob pull secrets are copied for the node agent.
	KruiseDaemonConfigNamespace = "kruise-daemon-config"
	// KruiseDaemonConfigNamespaceEnv overrides KruiseDaemonConfigNamespace in the manager and node agent.
	KruiseDaemonConfigNamespaceEnv = "KRUISE_DAEMON_CONFIG_NS"

	// ImagePullJobSecretSourceKeyAnnotation is set on a copied pull secret to "<namespace>/<name>" of its
	// source secret. An annotation because the value can exceed the label length limit.
	ImagePullJobSecretSourceKeyAnnotation = "imagepulljobs.kruise.io/source-key"
	// ImagePullJobSecretReferencesAnnotation is set on a copied pull secret to the comma-separated
	// "<namespace>/<name>" of the ImagePullJobs using it; the copy is deleted once the list is empty.
	ImagePullJobSecretReferencesAnnotation = "imagepulljobs.kruise.io/references"
	// ImagePullJobSecretModeAnnotation marks copied pull secrets created in batch mode; NodeImage cleanup
	// treats them as owned by the image entry instead of by the node.
	ImagePullJobSecretModeAnnotation = "imagepulljobs.kruise.io/mode"
	// ImagePullJobSecretModeBatch is the value of ImagePullJobSecretModeAnnotation for batch-mode copies.
	ImagePullJobSecretModeBatch = "batch"
	// ImagePullJobSecretSourceUIDLabel is set on copied pull secrets (by older versions) to the UID of the
	// source secret. Still read for compatibility, no longer required.
	ImagePullJobSecretSourceUIDLabel = "imagepulljobs.kruise.io/source-uid"

	// PullingImageByAnnotation is added to the CRI PullImage sandbox config annotations of every pull
	// started by the node agent.
	PullingImageByAnnotation = "apps.kruise.io/pulling-image-by"
	// PullingImageByKruiseDaemon is the value of PullingImageByAnnotation, kept as upstream's so runtime
	// plugins that match on it keep working.
	PullingImageByKruiseDaemon = "kruise-daemon"

	// FakeNodeImageLabelKey marks a NodeImage that has no Node behind it (tests); it is not deleted for
	// lack of a Node.
	FakeNodeImageLabelKey = "apps.kruise.io/fake-nodeimage"
)
