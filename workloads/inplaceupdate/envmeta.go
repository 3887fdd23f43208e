package inplaceupdate

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// A container whose env reads a pod label or annotation through a fieldRef sees a new value only when it
// starts again. The node agent hashes the values its running containers hold (RunningEnvHash), reports them
// in the runtime-containers-meta annotation and restarts a container of an in-place updating pod whose
// values are stale; the controllers compare that report with ExpectedEnvHash of the pod as it is now.

// metadataEnv lists the container's env vars that read a label or an annotation of the pod.
func metadataEnv(c *corev1.Container) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			if _, _, ok := metadataKey(e.ValueFrom.FieldRef.FieldPath); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// metadataKey splits a fieldRef path such as metadata.labels['app'] into ("labels", "app").
func metadataKey(path string) (kind, key string, ok bool) {
	for _, kind := range []string{"labels", "annotations"} {
		rest, found := strings.CutPrefix(path, "metadata."+kind+"[")
		if !found || len(rest) < 4 || !strings.HasSuffix(rest, "]") {
			continue
		}
		quoted := rest[:len(rest)-1]
		if q := quoted[0]; (q == '\'' || q == '"') && quoted[len(quoted)-1] == q {
			return kind, quoted[1 : len(quoted)-1], true
		}
	}
	return "", "", false
}

// ReadsMetadata reports whether the container's env reads a label or annotation of the pod.
func ReadsMetadata(c *corev1.Container) bool {
	return len(metadataEnv(c)) > 0
}

// ExpectedEnvHash is the hash of the values the container's metadata-reading env vars take from the pod's
// labels and annotations as they are now; 0 when the container reads none.
func ExpectedEnvHash(pod *corev1.Pod, c *corev1.Container) uint64 {
	vars := metadataEnv(c)
	if len(vars) == 0 {
		return 0
	}
	values := make(map[string]string, len(vars))
	for _, e := range vars {
		kind, key, _ := metadataKey(e.ValueFrom.FieldRef.FieldPath)
		m := pod.Labels
		if kind == "annotations" {
			m = pod.Annotations
		}
		values[e.Name] = m[key]
	}
	return envHash(values)
}

// RunningEnvHash is the same hash over the values a running container holds, read from the output of `env`
// in it (NAME=value lines); 0 when the container reads no metadata.
func RunningEnvHash(c *corev1.Container, envOutput []byte) uint64 {
	vars := metadataEnv(c)
	if len(vars) == 0 {
		return 0
	}
	held := map[string]string{}
	for line := range bytes.Lines(envOutput) {
		if name, value, ok := strings.Cut(strings.TrimRight(string(line), "\r\n"), "="); ok {
			held[name] = value
		}
	}
	values := make(map[string]string, len(vars))
	for _, e := range vars {
		values[e.Name] = held[e.Name]
	}
	return envHash(values)
}

// envHash is FNV-64a over the sorted NAME=value pairs; never 0, which means "reads no metadata".
func envHash(values map[string]string) uint64 {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	h := fnv.New64a()
	for _, n := range names {
		_, _ = h.Write([]byte(n + "=" + values[n] + "\x00"))
	}
	return max(h.Sum64(), 1)
}

// RuntimeMeta reads the pod's runtime-containers-meta annotation; ok is false when it is absent or malformed.
func RuntimeMeta(pod *corev1.Pod) (kruiseappspub.RuntimeContainerMetaSet, bool) {
	var set kruiseappspub.RuntimeContainerMetaSet
	raw, ok := pod.Annotations[kruiseappspub.RuntimeContainerMetaKey]
	if !ok || json.Unmarshal([]byte(raw), &set) != nil {
		return set, false
	}
	return set, true
}

// envRestarted reports whether every container of the pod that reads metadata runs with the pod's current
// values, as the node agent reports them: its report names the container the pod's status names, with the
// expected hash. A report without a hash (the agent could not read the environment) is taken as current. A
// pod without a report has no agent looking after it, and its containers keep their values, as upstream's
// do without kruise-daemon.
func envRestarted(pod *corev1.Pod) bool {
	set, ok := RuntimeMeta(pod)
	if !ok {
		return true
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		want := ExpectedEnvHash(pod, c)
		if want == 0 {
			continue
		}
		meta, status := findMeta(set, c.Name), podcondition.ContainerStatus(pod, c.Name)
		if meta == nil || status == nil || meta.ContainerID != status.ContainerID {
			return false
		}
		if got := meta.Hashes.ExtractedEnvFromMetadataHash; got != 0 && got != want {
			return false
		}
	}
	return true
}

func findMeta(set kruiseappspub.RuntimeContainerMetaSet, name string) *kruiseappspub.RuntimeContainerMeta {
	for i := range set.Containers {
		if set.Containers[i].Name == name {
			return &set.Containers[i]
		}
	}
	return nil
}
