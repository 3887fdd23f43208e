package cri

import (
	"context"
	"fmt"
)

// PodContainers returns the newest container of each name the kubelet ran for the pod with podUID (the one
// the kubelet reports in the pod's status), with its status.
func PodContainers(ctx context.Context, rt Runtime, podUID string) (map[string]ContainerStatus, error) {
	list, err := rt.ListContainers(ctx, map[string]string{LabelPodUID: podUID})
	if err != nil {
		return nil, err
	}
	newest := map[string]Container{}
	for _, c := range list {
		name := containerName(c)
		if cur, ok := newest[name]; !ok || c.CreatedAt.After(cur.CreatedAt) {
			newest[name] = c
		}
	}
	out := make(map[string]ContainerStatus, len(newest))
	for name, c := range newest {
		st, err := rt.ContainerStatus(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("container %s of pod %s: %w", name, podUID, err)
		}
		out[name] = st
	}
	return out, nil
}

// containerName is the pod-spec name of a container: the kubelet's label, else the CRI metadata name.
func containerName(c Container) string {
	if n := c.Labels[LabelContainerName]; n != "" {
		return n
	}
	return c.Name
}
