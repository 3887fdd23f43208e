package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// daemonSet is a small valid DaemonSet, defaulted as the mutating webhook leaves it.
func daemonSet() *kruiseappsv1alpha1.DaemonSet {
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}
	Default(ds)
	return ds
}

func ints(n int32) *intstr.IntOrString  { return ptr.To(intstr.FromInt32(n)) }
func strs(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }

func TestDefault(t *testing.T) {
	rolling := func(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet) kruiseappsv1alpha1.DaemonSetUpdateStrategy {
		return kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: ru}
	}
	tests := []struct {
		name string
		in   kruiseappsv1alpha1.DaemonSetUpdateStrategy
		want kruiseappsv1alpha1.DaemonSetUpdateStrategy
	}{
		{"nothing set: Standard, maxUnavailable 1", kruiseappsv1alpha1.DaemonSetUpdateStrategy{},
			rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "Standard", MaxUnavailable: ints(1), MaxSurge: ints(0)})},
		{"a surge alone is kept", rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{MaxSurge: strs("10%")}),
			rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "Standard", MaxSurge: strs("10%")})},
		{"deprecated Surging: Standard with a surge of 1", rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "Surging"}),
			rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "Standard", MaxUnavailable: ints(0), MaxSurge: ints(1)})},
		{"in place keeps its type", rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "InPlaceIfPossible", Partition: ints(3)}),
			rolling(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: "InPlaceIfPossible", Partition: ints(3), MaxUnavailable: ints(1), MaxSurge: ints(0)})},
		{"OnDelete gets no rollingUpdate", kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: "OnDelete"}, kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: "OnDelete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := &kruiseappsv1alpha1.DaemonSet{Spec: kruiseappsv1alpha1.DaemonSetSpec{UpdateStrategy: tt.in}}
			Default(ds)
			if diff := cmp.Diff(tt.want, ds.Spec.UpdateStrategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
			if *ds.Spec.BurstReplicas != intstr.FromInt32(250) || *ds.Spec.RevisionHistoryLimit != 10 {
				t.Errorf("burstReplicas %v revisionHistoryLimit %v", ds.Spec.BurstReplicas, ds.Spec.RevisionHistoryLimit)
			}
			again := ds.DeepCopy()
			Default(again)
			if diff := cmp.Diff(ds, again); diff != "" {
				t.Errorf("defaulting twice changed (-once +twice):\n%s", diff)
			}
		})
	}
	Default(nil)
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kruiseappsv1alpha1.DaemonSet)
		want   string
	}{
		{"no selector", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Selector = nil }, "spec.selector: Required value"},
		{"an empty selector", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			"spec.selector: Invalid value: {}: empty selector is invalid for daemonset"},
		{"a selector the template does not match", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Template.Labels["app"] = "other" },
			"spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"},
		{"a container without image", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "" },
			"spec.template.spec.containers[0].image: Required value"},
		{"restartPolicy Never", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{"activeDeadlineSeconds", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"},
		{"a writable GCE disk", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "x"}}}}
		}, "spec.template.spec.volumes[0].gcePersistentDisk.readOnly: Invalid value: false"},
		{"negative minReadySeconds", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = -1 },
			"spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"},
		{"negative revisionHistoryLimit", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			"spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"},
		{"an unknown strategy type", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Replace" },
			`spec.updateStrategy.type: Unsupported value: "Replace": supported values: "RollingUpdate", "OnDelete"`},
		{"RollingUpdate without rollingUpdate", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			"spec.updateStrategy.rollingUpdate: Required value"},
		{"both maxUnavailable and maxSurge", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ints(1) },
			`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero`},
		{"neither", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = strs("0%")
		},
			"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"},
		{"a percentage over 100", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = strs("120%")
		},
			`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%`},
		{"a number as a string", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = strs("5")
		},
			`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "5": a valid percent string must be`},
		{"surge in place", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ru := ds.Spec.UpdateStrategy.RollingUpdate
			ru.Type, ru.MaxUnavailable, ru.MaxSurge = kruiseappsv1alpha1.InplaceRollingUpdateType, ints(0), ints(1)
		}, "spec.updateStrategy.rollingUpdate.maxSurge: Required value: must be 0 for InPlaceIfPossible type"},
		{"an unknown rolling update type", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Type = "Blue" },
			`spec.updateStrategy.rollingUpdate.rollingUpdateType: Unsupported value: "Blue"`},
		{"a negative partition", func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Partition = ints(-2) },
			"spec.updateStrategy.rollingUpdate.partition: Invalid value: -2: must be greater than or equal to 0"},
		{"an inPlaceUpdate hook", func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.Lifecycle = &kruiseappspub.Lifecycle{InPlaceUpdate: &kruiseappspub.LifecycleHook{FinalizersHandler: []string{"x/y"}}}
		}, "spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := daemonSet()
			tt.mutate(ds)
			errs := Validate(ds, nil)
			if agg := errs.ToAggregate(); agg == nil || !strings.Contains(agg.Error(), tt.want) {
				t.Fatalf("errors %v, want one with %q", agg, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]func(*kruiseappsv1alpha1.DaemonSet){
		"defaults": func(*kruiseappsv1alpha1.DaemonSet) {},
		"OnDelete": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy = kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: "OnDelete"}
		},
		"surge only": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ints(0)
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = strs("25%")
		},
		"partition percentage": func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Partition = strs("50%") },
		"preDelete hook": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.Lifecycle = &kruiseappspub.Lifecycle{PreDelete: &kruiseappspub.LifecycleHook{MarkPodNotReady: true}}
		},
		"restartPolicy Always": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
		"a node label selector": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		},
		"in place, unavailable%": func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Type = "InPlaceIfPossible"
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = strs("10%")
		},
	} {
		ds := daemonSet()
		mutate(ds)
		if errs := Validate(ds, nil); len(errs) > 0 {
			t.Errorf("%s: rejected: %v", name, errs)
		}
	}
	if errs := Validate(nil, nil); len(errs) != 1 {
		t.Errorf("nil DaemonSet: %v", errs)
	}
}

// An update keeps what the stored DaemonSet got away with, and refuses what it adds.
func TestValidateUpdateRatchets(t *testing.T) {
	old := daemonSet()
	old.Spec.MinReadySeconds = -1
	cur := old.DeepCopy()
	cur.Spec.Template.Spec.Containers[0].Image = "agent:2"
	if errs := Validate(cur, old); len(errs) > 0 {
		t.Errorf("an update of a DaemonSet stored with a bad field: %v", errs)
	}
	cur.Spec.RevisionHistoryLimit = ptr.To[int32](-3)
	if errs := Validate(cur, old); len(errs) != 1 {
		t.Errorf("a new bad field: %v, want one error", errs)
	}
}

// The seed's complete Advanced DaemonSets are accepted once defaulted.
func TestSeedDaemonSetsAreAccepted(t *testing.T) {
	for _, file := range []string{"020-daemonset-nginx.yaml", "021-daemonset-nginx.yaml", "022-daemonset-nginx.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../../test/e2e/testdata/seed", file))
		if err != nil {
			t.Fatal(err)
		}
		ds := &kruiseappsv1alpha1.DaemonSet{}
		if err := yaml.UnmarshalStrict(raw, ds); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		Default(ds)
		if errs := Validate(ds, nil); len(errs) > 0 {
			t.Errorf("%s rejected: %v", file, errs)
		}
	}
}
