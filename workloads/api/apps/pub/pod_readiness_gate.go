package pub

import corev1 "k8s.io/api/core/v1"

// KruisePodReadyConditionType is the readiness gate injected into pods of apps.kruise.io workloads. Its
// condition is False while any component (lifecycle hook, container recreate, ...) holds the pod not ready;
// the message is a JSON list of {userAgent, key} holders.
const KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"
