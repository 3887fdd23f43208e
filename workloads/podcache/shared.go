package podcache

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Slim pods share what the pods of one workload hold alike. A decoded pod has strings, maps and slices of its
// own; the pods of a ReplicaSet carry the same namespace, labels, owner and condition types, so one copy serves
// them all. Nothing may change a cached pod's maps or slices in place (controllers read copies, and cache readers
// treat what they get as read-only), so sharing cannot leak one pod's change into another.

// maxInterned bounds each table of shared values.
const maxInterned = 4096

// table maps a key to the one value the slim pods share for it. When full it starts over: values the cache
// still holds stay where they are, and the values of workloads long gone do not keep newer ones from sharing.
type table[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

func (t *table[T]) get(key string, build func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.values[key]; ok {
		return v
	}
	if len(t.values) >= maxInterned || t.values == nil {
		t.values = map[string]T{}
	}
	v := build()
	t.values[key] = v
	return v
}

var (
	names  table[[]corev1.Container]
	labels table[map[string]string]
	owners table[[]metav1.OwnerReference]
)

// str is s shared with every equal string of the cache; the runtime drops it once no pod holds it.
func str(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// sharedMeta is meta with its namespace, generated-name prefix, labels and owner references shared.
func sharedMeta(meta metav1.ObjectMeta) metav1.ObjectMeta {
	meta.Namespace = str(meta.Namespace)
	meta.GenerateName = str(meta.GenerateName)
	meta.Labels = sharedLabels(meta.Labels)
	meta.OwnerReferences = sharedOwners(meta.OwnerReferences)
	return meta
}

func sharedLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	var key strings.Builder
	for _, k := range slices.Sorted(maps.Keys(in)) {
		key.WriteString(k)
		key.WriteByte(0)
		key.WriteString(in[k])
		key.WriteByte(0)
	}
	return labels.get(key.String(), func() map[string]string {
		out := make(map[string]string, len(in))
		for k, v := range in {
			out[str(k)] = str(v)
		}
		return out
	})
}

func sharedOwners(in []metav1.OwnerReference) []metav1.OwnerReference {
	if len(in) == 0 {
		return in
	}
	var key strings.Builder
	for _, r := range in {
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID), flag(r.Controller), flag(r.BlockOwnerDeletion)} {
			key.WriteString(s)
			key.WriteByte(0)
		}
	}
	return owners.get(key.String(), func() []metav1.OwnerReference { return slices.Clone(in) })
}

// flag spells an optional bool for a key: unset, true or false.
func flag(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}

// sharedConditions shares the strings of conditions, which are the decoded pod's own and changed in place.
func sharedConditions(conditions []corev1.PodCondition) []corev1.PodCondition {
	for i := range conditions {
		c := &conditions[i]
		c.Type = corev1.PodConditionType(str(string(c.Type)))
		c.Status = corev1.ConditionStatus(str(string(c.Status)))
		c.Reason = str(c.Reason)
	}
	return conditions
}
