package containermeta

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// kubeletHashKey is the annotation holding the kubelet's hash of the container spec it created the
// container from; the report passes it on as plainHash, as upstream's daemon does.
const kubeletHashKey = "io.kubernetes.container.hash"

// Running is one running container of the pod and, for one whose env reads pod metadata, the hash of the
// values it holds (0 when the agent could not read them).
type Running struct {
	cri.Container
	EnvHash uint64
}

// Plan is what the agent does for a pod: the report to write (Meta, "" when the annotation is current) and
// the containers to restart so that they read the pod's current labels and annotations.
type Plan struct {
	Meta    string
	Restart []Running
}

// Newest picks, per container name, the running container with the highest attempt: the one the kubelet
// reports; exited ones wait for garbage collection.
func Newest(cs []cri.Container) map[string]cri.Container {
	out := map[string]cri.Container{}
	for _, c := range cs {
		if c.State != cri.StateRunning {
			continue
		}
		if cur, ok := out[c.Name]; !ok || c.Attempt > cur.Attempt {
			out[c.Name] = c
		}
	}
	return out
}

// PlanPod reports the pod's running containers and restarts the stale ones of an in-place update: a
// container whose env reads metadata the update changed holds old values until it starts again. running is
// keyed by container name; runtimeName prefixes ids the pod's status does not name yet.
func PlanPod(pod *corev1.Pod, running map[string]Running, runtimeName string) (Plan, error) {
	set := kruiseappspub.RuntimeContainerMetaSet{Containers: []kruiseappspub.RuntimeContainerMeta{}}
	var p Plan
	for i := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[i]
		c, ok := running[spec.Name]
		if !ok {
			continue
		}
		set.Containers = append(set.Containers, kruiseappspub.RuntimeContainerMeta{
			Name: spec.Name, ContainerID: containerID(pod, spec.Name, c.ID, runtimeName), RestartCount: c.RestartCount(),
			Hashes: kruiseappspub.RuntimeContainerHashes{PlainHash: kubeletHash(c.Container), ExtractedEnvFromMetadataHash: c.EnvHash},
		})
		if updating(pod) && c.EnvHash != 0 && c.EnvHash != inplaceupdate.ExpectedEnvHash(pod, spec) && !imageChanging(pod, spec) {
			p.Restart = append(p.Restart, c)
		}
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return Plan{}, err
	}
	if pod.Annotations[kruiseappspub.RuntimeContainerMetaKey] != string(raw) {
		p.Meta = string(raw)
	}
	return p, nil
}

// updating reports whether the pod is in an in-place update: its InPlaceUpdateReady condition is False.
func updating(pod *corev1.Pod) bool {
	c := podcondition.Get(pod, kruiseappspub.InPlaceUpdateReady)
	return c != nil && c.Status == corev1.ConditionFalse
}

// imageChanging reports whether the kubelet is about to restart the container anyway, for a new image: its
// status still reports another image than the spec's. Stopping it too would restart it twice.
func imageChanging(pod *corev1.Pod, spec *corev1.Container) bool {
	s := podcondition.ContainerStatus(pod, spec.Name)
	return s != nil && s.Image != "" && s.Image != spec.Image
}

// containerID is the id as the pod's status spells it ("<runtime>://<id>"), so that controllers can match
// the report to the status.
func containerID(pod *corev1.Pod, name, id, runtimeName string) string {
	if s := podcondition.ContainerStatus(pod, name); s != nil {
		if scheme, _, ok := strings.Cut(s.ContainerID, "://"); ok {
			return scheme + "://" + id
		}
	}
	return runtimeName + "://" + id
}

func kubeletHash(c cri.Container) uint64 {
	h, err := strconv.ParseUint(c.Annotations[kubeletHashKey], 16, 64)
	if err != nil {
		return 0
	}
	return h
}
