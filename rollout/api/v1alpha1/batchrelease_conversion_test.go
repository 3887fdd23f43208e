package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var hubBatchReleaseType = metav1.TypeMeta{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease"}

func brToHub(t *testing.T, in *BatchRelease) *rolloutsv1beta1.BatchRelease {
	t.Helper()
	out := &rolloutsv1beta1.BatchRelease{}
	if err := ConvertBatchReleaseToV1beta1(in, out); err != nil {
		t.Fatalf("ConvertBatchReleaseToV1beta1: %v", err)
	}
	return out
}

func brToSpoke(t *testing.T, in *rolloutsv1beta1.BatchRelease) *BatchRelease {
	t.Helper()
	out := &BatchRelease{}
	if err := ConvertBatchReleaseFromV1beta1(in, out); err != nil {
		t.Fatalf("ConvertBatchReleaseFromV1beta1: %v", err)
	}
	return out
}

func spokeBatchRelease(annotations map[string]string, style RollingStyleType) *BatchRelease {
	return &BatchRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Annotations: annotations},
		Spec: BatchReleaseSpec{
			TargetRef:   ObjectRef{WorkloadRef: &WorkloadRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}},
			ReleasePlan: ReleasePlan{RollingStyle: style},
		},
	}
}

func TestConvertBatchReleaseToV1beta1(t *testing.T) {
	now := metav1.Unix(1700000000, 0)
	in := spokeBatchRelease(map[string]string{RolloutStyleAnnotation: "partition"}, "")
	in.Spec.ReleasePlan = ReleasePlan{
		Batches:                      []ReleaseBatch{{CanaryReplicas: intstr.FromInt32(1)}, {CanaryReplicas: intstr.FromString("50%")}},
		BatchPartition:               ptrTo[int32](1),
		RolloutID:                    "r1",
		FailureThreshold:             intOrStr("10%"),
		FinalizingPolicy:             WaitResumeFinalizingPolicyType,
		PatchPodTemplateMetadata:     &PatchPodTemplateMetadata{Annotations: map[string]string{"a": "b"}},
		EnableExtraWorkloadForCanary: true,
	}
	in.Status = BatchReleaseStatus{
		Conditions: []RolloutCondition{{Type: "Progressing", Status: corev1.ConditionTrue, Reason: "r", Message: "m"}},
		CanaryStatus: BatchReleaseCanaryStatus{
			CurrentBatchState: ReadyBatchState, CurrentBatch: 1, BatchReadyTime: &now,
			UpdatedReplicas: 5, UpdatedReadyReplicas: 4, NoNeedUpdateReplicas: ptrTo[int32](2),
		},
		StableRevision: "s", UpdateRevision: "u", ObservedGeneration: 2, ObservedRolloutID: "r1",
		ObservedWorkloadReplicas: 10, CollisionCount: ptrTo[int32](1), ObservedReleasePlanHash: "h", Phase: RolloutPhaseProgressing,
	}
	want := &rolloutsv1beta1.BatchRelease{
		TypeMeta:   hubBatchReleaseType,
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Annotations: map[string]string{RolloutStyleAnnotation: "partition"}},
		Spec: rolloutsv1beta1.BatchReleaseSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			ReleasePlan: rolloutsv1beta1.ReleasePlan{
				Batches:                      []rolloutsv1beta1.ReleaseBatch{{CanaryReplicas: intstr.FromInt32(1)}, {CanaryReplicas: intstr.FromString("50%")}},
				BatchPartition:               ptrTo[int32](1),
				RolloutID:                    "r1",
				FailureThreshold:             intOrStr("10%"),
				FinalizingPolicy:             rolloutsv1beta1.WaitResumeFinalizingPolicyType,
				PatchPodTemplateMetadata:     &rolloutsv1beta1.PatchPodTemplateMetadata{Annotations: map[string]string{"a": "b"}},
				RollingStyle:                 rolloutsv1beta1.PartitionRollingStyle,
				EnableExtraWorkloadForCanary: true,
			},
		},
		Status: rolloutsv1beta1.BatchReleaseStatus{
			Conditions: []rolloutsv1beta1.RolloutCondition{{Type: "Progressing", Status: corev1.ConditionTrue, Reason: "r", Message: "m"}},
			CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{
				CurrentBatchState: rolloutsv1beta1.ReadyBatchState, CurrentBatch: 1, BatchReadyTime: &now,
				UpdatedReplicas: 5, UpdatedReadyReplicas: 4, NoNeedUpdateReplicas: ptrTo[int32](2),
			},
			StableRevision: "s", UpdateRevision: "u", ObservedGeneration: 2, ObservedRolloutID: "r1",
			ObservedWorkloadReplicas: 10, CollisionCount: ptrTo[int32](1), ObservedReleasePlanHash: "h",
			Phase: rolloutsv1beta1.RolloutPhaseProgressing,
		},
	}
	if diff := cmp.Diff(want, brToHub(t, in)); diff != "" {
		t.Errorf("BatchRelease (-want +got):\n%s", diff)
	}

	in.Spec.TargetRef.WorkloadRef = nil
	if got := brToHub(t, in); got.Spec.WorkloadRef != (rolloutsv1beta1.ObjectRef{}) {
		t.Errorf("nil workloadRef converted to %+v", got.Spec.WorkloadRef)
	}
}

func TestConvertBatchReleaseToV1beta1RollingStyle(t *testing.T) {
	tests := []struct {
		name           string
		annotations    map[string]string
		field          RollingStyleType
		wantStyle      rolloutsv1beta1.RollingStyleType
		wantAnnotation *string
	}{
		{name: "partition annotation", annotations: map[string]string{RolloutStyleAnnotation: "partition"}, wantStyle: "Partition", wantAnnotation: ptrTo("partition")},
		{name: "annotation case is ignored", annotations: map[string]string{RolloutStyleAnnotation: "CANARY"}, wantStyle: "Canary", wantAnnotation: ptrTo("canary")},
		{name: "bluegreen annotation", annotations: map[string]string{RolloutStyleAnnotation: "BlueGreen"}, wantStyle: "BlueGreen", wantAnnotation: ptrTo("bluegreen")},
		{name: "annotation beats the field", annotations: map[string]string{RolloutStyleAnnotation: "partition"}, field: "Canary", wantStyle: "Partition", wantAnnotation: ptrTo("partition")},
		{name: "field spelling kept when both agree", annotations: map[string]string{RolloutStyleAnnotation: "Canary"}, field: "canary", wantStyle: "canary", wantAnnotation: ptrTo("canary")},
		{name: "field without annotation", field: "Canary", wantStyle: "Canary", wantAnnotation: ptrTo("canary")},
		{name: "unknown annotation falls back to the field", annotations: map[string]string{RolloutStyleAnnotation: "foo"}, field: "BlueGreen", wantStyle: "BlueGreen", wantAnnotation: ptrTo("bluegreen")},
		{name: "unknown annotation and no field", annotations: map[string]string{RolloutStyleAnnotation: "foo"}, wantAnnotation: ptrTo("foo")},
		{name: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := brToHub(t, spokeBatchRelease(tt.annotations, tt.field))
			if got.Spec.ReleasePlan.RollingStyle != tt.wantStyle {
				t.Errorf("rollingStyle = %q, want %q", got.Spec.ReleasePlan.RollingStyle, tt.wantStyle)
			}
			annotation, ok := got.Annotations[RolloutStyleAnnotation]
			if ok != (tt.wantAnnotation != nil) || (ok && annotation != *tt.wantAnnotation) {
				t.Errorf("annotation = %q (present %v), want %v", annotation, ok, tt.wantAnnotation)
			}
		})
	}
}

func TestConvertBatchReleaseFromV1beta1(t *testing.T) {
	tests := []struct {
		name            string
		annotations     map[string]string
		style           rolloutsv1beta1.RollingStyleType
		wantAnnotations map[string]string
	}{
		{name: "style written in lower case", style: "BlueGreen", wantAnnotations: map[string]string{RolloutStyleAnnotation: "bluegreen"}},
		{name: "style overrides the annotation", annotations: map[string]string{RolloutStyleAnnotation: "partition"}, style: "Canary", wantAnnotations: map[string]string{RolloutStyleAnnotation: "canary"}},
		{name: "no style removes a recognised annotation", annotations: map[string]string{RolloutStyleAnnotation: "canary"}, wantAnnotations: map[string]string{}},
		{name: "no style keeps another annotation", annotations: map[string]string{RolloutStyleAnnotation: "foo"}, wantAnnotations: map[string]string{RolloutStyleAnnotation: "foo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &rolloutsv1beta1.BatchRelease{
				TypeMeta:   hubBatchReleaseType,
				ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: tt.annotations},
				Spec: rolloutsv1beta1.BatchReleaseSpec{
					WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
					ReleasePlan: rolloutsv1beta1.ReleasePlan{RollingStyle: tt.style, EnableExtraWorkloadForCanary: true},
				},
			}
			got := brToSpoke(t, in)
			plan := got.Spec.ReleasePlan
			if plan.RollingStyle != RollingStyleType(tt.style) || !plan.EnableExtraWorkloadForCanary {
				t.Errorf("release plan = %+v", plan)
			}
			if ref := got.Spec.TargetRef.WorkloadRef; ref == nil || *ref != (WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}) {
				t.Errorf("targetReference.workloadRef = %+v", ref)
			}
			delete(got.Annotations, ConversionDataAnnotation)
			if diff := cmp.Diff(tt.wantAnnotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			requireSameJSON(t, in, brToHub(t, brToSpoke(t, in)))
		})
	}
}

func TestConvertBatchReleaseKeepsMessage(t *testing.T) {
	in := &rolloutsv1beta1.BatchRelease{
		TypeMeta:   hubBatchReleaseType,
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Status:     rolloutsv1beta1.BatchReleaseStatus{Phase: rolloutsv1beta1.RolloutPhaseCompleted, Message: "BatchRelease is completed"},
	}
	spoke := brToSpoke(t, in)
	if spoke.Annotations[ConversionDataAnnotation] != `{"message":"BatchRelease is completed"}` {
		t.Errorf("conversion data = %q", spoke.Annotations[ConversionDataAnnotation])
	}
	back := brToHub(t, spoke)
	if back.Status.Message != in.Status.Message {
		t.Errorf("message = %q", back.Status.Message)
	}
	if _, ok := back.Annotations[ConversionDataAnnotation]; ok {
		t.Errorf("conversion data left on the hub")
	}
}

func TestConvertBatchReleaseNilObjects(t *testing.T) {
	if err := ConvertBatchReleaseToV1beta1(&BatchRelease{}, nil); err == nil {
		t.Errorf("nil destination accepted")
	}
	if err := ConvertBatchReleaseFromV1beta1(nil, &BatchRelease{}); err == nil {
		t.Errorf("nil source accepted")
	}
}
