package crrmanager

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// SyncStatuses is the sync-container-statuses annotation for crr: the status of each of its containers
// that runs in a container started since the request was created, i.e. one the node agent may count as
// recreated. Older and stopped containers are left out, as upstream does.
func SyncStatuses(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) string {
	statuses := make([]kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatus, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		st := podcondition.ContainerStatus(pod, c.Name)
		if st == nil || st.State.Running == nil || st.State.Running.StartedAt.Before(&crr.CreationTimestamp) {
			continue
		}
		statuses = append(statuses, kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
			Name: st.Name, Ready: st.Ready, RestartCount: st.RestartCount, ContainerID: st.ContainerID,
		})
	}
	raw, err := json.Marshal(statuses)
	if err != nil {
		return "[]" // a list of plain structs always encodes
	}
	return string(raw)
}

// changedSyncStatuses is the new annotation, nil when it holds that already.
func changedSyncStatuses(crr *kruiseappsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) *string {
	s := SyncStatuses(crr, pod)
	if cur, ok := crr.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; ok && cur == s {
		return nil
	}
	return &s
}
