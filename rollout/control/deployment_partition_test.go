package control

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var (
	partitionOwner = metav1.OwnerReference{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease",
		Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	otherOwner = metav1.OwnerReference{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease",
		Name: "web", UID: "uid-other", Controller: ptr.To(true)}
)

const (
	strategyKey = rolloutsv1beta1.DeploymentStrategyAnnotation
	savedRU     = `{"maxUnavailable":1,"maxSurge":"50%"}`
)

func partitionDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-d", Generation: 3,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](10),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: *simpleTemplate(),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("50%"))}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3},
	}
}

// released is a Deployment as Initialize leaves it for owner, with the given partition.
func released(owner metav1.OwnerReference, partition string) *appsv1.Deployment {
	d := partitionDeployment()
	d.Labels[rolloutsv1beta1.AdvancedDeploymentControlLabel] = "true"
	d.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel] = "stable"
	d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] = ControlInfo(owner)
	d.Annotations[strategyKey] = `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":` + partition + `}`
	d.Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation] = `{"expectedUpdatedReplicas":1}`
	d.Spec.Paused = true
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

func TestPartitionedReplicas(t *testing.T) {
	tests := []struct {
		partition intstr.IntOrString
		replicas  int32
		want      int32
	}{
		{intstr.FromInt32(1), 10, 1},
		{intstr.FromInt32(12), 10, 10},
		{intstr.FromInt32(-1), 10, 0},
		{intstr.FromString("50%"), 10, 5},
		{intstr.FromString("15%"), 10, 2},
		{intstr.FromString("99%"), 10, 9},
		{intstr.FromString("100%"), 10, 10},
		{intstr.FromString("150%"), 10, 10},
		{intstr.FromString("50%"), 1, 1},
		{intstr.FromString("0%"), 10, 0},
		{intstr.FromString("7"), 10, 7},
		{intstr.FromInt32(3), 0, 0},
	}
	for _, tt := range tests {
		got, err := PartitionedReplicas(tt.partition, tt.replicas)
		if err != nil || got != tt.want {
			t.Errorf("PartitionedReplicas(%s, %d) = %d, %v; want %d", tt.partition.String(), tt.replicas, got, err, tt.want)
		}
	}
	if _, err := PartitionedReplicas(intstr.FromString("half"), 10); err == nil {
		t.Error("PartitionedReplicas(half) did not fail")
	}
}

func TestPartitionInitialized(t *testing.T) {
	fresh := `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":0}`
	webhook := partitionDeployment()
	webhook.Spec.Paused = true
	webhook.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	webhook.Annotations[strategyKey] = `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"paused":true,"partition":4}`
	tests := []struct {
		name         string
		in           *appsv1.Deployment
		wantStrategy string
	}{
		{name: "fresh Deployment saves its rolling update", in: partitionDeployment(), wantStrategy: fresh},
		{name: "again for the same release keeps the partition", in: released(partitionOwner, "5"),
			wantStrategy: `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":5}`},
		{name: "left by another release starts over", in: released(otherOwner, "5"), wantStrategy: fresh},
		{name: "frozen by the webhook keeps the saved rolling update", in: webhook, wantStrategy: fresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			got, err := partitionInitialized(tt.in, partitionOwner)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantStrategy, got.Annotations[strategyKey]); diff != "" {
				t.Errorf("strategy annotation (-want +got):\n%s", diff)
			}
			if !got.Spec.Paused || got.Spec.Strategy != (appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}) ||
				got.Labels[rolloutsv1beta1.AdvancedDeploymentControlLabel] != "true" || !ControlledBy(got.Annotations, partitionOwner) {
				t.Errorf("not frozen: paused %v, strategy %+v, labels %v", got.Spec.Paused, got.Spec.Strategy, got.Labels)
			}
			if got.Annotations["team"] != "a" || !cmp.Equal(before, tt.in) {
				t.Errorf("other annotations or the input changed")
			}
		})
	}
}

// TestPartitionInitializedFor freezes a Deployment and raises its partition to the first batch in one change; a
// release taken up again keeps a partition already beyond the batch, and an aborted mark goes.
func TestPartitionInitializedFor(t *testing.T) {
	labels := BatchPodLabels("v2", 0)
	share := Batch{DesiredUpdated: 5, Share: ptr.To(intstr.FromString("50%")), PodLabels: labels}
	aborted := released(partitionOwner, "7")
	aborted.Annotations[ReleaseAbortedAnnotation] = "true"
	tests := []struct {
		name         string
		in           *appsv1.Deployment
		batch        Batch
		wantStrategy string
		wantLabels   string
		wantExtra    string
	}{
		{name: "fresh Deployment starts at the batch's share", in: partitionDeployment(), batch: share,
			wantStrategy: `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":"50%"}`,
			wantLabels:   EncodeBatchPodLabels(labels), wantExtra: `{"expectedUpdatedReplicas":5}`},
		{name: "a count without a share", in: partitionDeployment(), batch: Batch{DesiredUpdated: 3},
			wantStrategy: `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":3}`,
			wantExtra:    `{"expectedUpdatedReplicas":3}`},
		{name: "again beyond the batch keeps the partition and drops the abort", in: aborted, batch: Batch{DesiredUpdated: 3},
			wantStrategy: `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":7}`,
			wantExtra:    `{"expectedUpdatedReplicas":1}`}, // the fixture's, kept
		{name: "an extra status written is the controller's", in: withExtraStatus(partitionDeployment(), `{"updatedReadyReplicas":2}`),
			batch:        Batch{DesiredUpdated: 3},
			wantStrategy: `{"rollingStyle":"Partition","rollingUpdate":` + savedRU + `,"partition":3}`,
			wantExtra:    `{"updatedReadyReplicas":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			got, err := partitionInitializedFor(tt.in, partitionOwner, tt.batch)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantStrategy, got.Annotations[strategyKey]); diff != "" {
				t.Errorf("strategy annotation (-want +got):\n%s", diff)
			}
			if got.Annotations[extraStatusKey] != tt.wantExtra {
				t.Errorf("extra status %q, want %q", got.Annotations[extraStatusKey], tt.wantExtra)
			}
			if got.Annotations[BatchPodLabelsAnnotation] != tt.wantLabels {
				t.Errorf("pod labels annotation %q, want %q", got.Annotations[BatchPodLabelsAnnotation], tt.wantLabels)
			}
			if _, marked := got.Annotations[ReleaseAbortedAnnotation]; marked {
				t.Errorf("the aborted mark stayed")
			}
			if !got.Spec.Paused || !ControlledBy(got.Annotations, partitionOwner) || !cmp.Equal(before, tt.in) {
				t.Errorf("not frozen for the release, or the input changed")
			}
		})
	}
}

const extraStatusKey = rolloutsv1beta1.DeploymentExtraStatusAnnotation

func withExtraStatus(d *appsv1.Deployment, s string) *appsv1.Deployment {
	d.Annotations[extraStatusKey] = s
	return d
}

func TestPartitionUpgraded(t *testing.T) {
	batch2 := BatchPodLabels("v2", 1)
	tests := []struct {
		name      string
		partition string
		desired   int32
		share     string            // the batch's percentage, if any
		labels    map[string]string // the batch's pod labels
		recorded  string            // the BatchPodLabelsAnnotation before
		// wantStrategy ends the new strategy annotation; wantLabels is the new pod labels annotation; ""
		// when unchanged.
		wantStrategy string
		wantLabels   string
	}{
		{name: "raised", partition: "1", desired: 5, wantStrategy: `"partition":5}`},
		{name: "never lowered", partition: "5", desired: 3},
		{name: "a percentage counts resolved", partition: `"50%"`, desired: 5},
		{name: "a percentage below is replaced", partition: `"20%"`, desired: 5, wantStrategy: `"partition":5}`},
		{name: "raised with the batch's labels", partition: "1", desired: 5, labels: batch2,
			wantStrategy: `"partition":5}`, wantLabels: `{"rollouts.kruise.io/rollout-batch-id":"2","rollouts.kruise.io/rollout-id":"v2"}`},
		{name: "labels already recorded", partition: "1", desired: 5, labels: batch2,
			recorded: EncodeBatchPodLabels(batch2), wantStrategy: `"partition":5}`},
		{name: "a percentage batch is written as its percentage", partition: "1", desired: 4, share: "40%",
			wantStrategy: `"partition":"40%"}`},
		{name: "the same percentage in place stays", partition: `"40%"`, desired: 4, share: "40%"},
		{name: "a share that is not the desired count is written as the count", partition: "1", desired: 5, share: "40%",
			wantStrategy: `"partition":5}`},
		{name: "new labels without a new partition", partition: "5", desired: 5, labels: batch2,
			recorded: EncodeBatchPodLabels(BatchPodLabels("v2", 0)), wantLabels: EncodeBatchPodLabels(batch2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := released(partitionOwner, tt.partition)
			if tt.recorded != "" {
				d.Annotations[BatchPodLabelsAnnotation] = tt.recorded
			}
			batch := Batch{DesiredUpdated: tt.desired, PodLabels: tt.labels}
			if tt.share != "" {
				batch.Share = ptr.To(intstr.FromString(tt.share))
			}
			got, err := partitionUpgraded(d, batch)
			if err != nil {
				t.Fatal(err)
			}
			strategy, changed := got[strategyKey]
			if changed != (tt.wantStrategy != "") || !strings.HasSuffix(strategy, tt.wantStrategy) {
				t.Errorf("strategy annotation change %q (%v), want one ending with %q", strategy, changed, tt.wantStrategy)
			}
			if got[BatchPodLabelsAnnotation] != tt.wantLabels {
				t.Errorf("pod labels annotation change %q, want %q", got[BatchPodLabelsAnnotation], tt.wantLabels)
			}
		})
	}
}

func TestPartitionMalformedAnnotations(t *testing.T) {
	broken := released(partitionOwner, "1")
	broken.Annotations[strategyKey] = `{"partition":`
	badPartition := released(partitionOwner, `"lots"`)
	_, errInit := partitionInitialized(broken, partitionOwner)
	_, errUpgrade := partitionUpgraded(broken, Batch{DesiredUpdated: 2})
	_, errPartition := partitionUpgraded(badPartition, Batch{DesiredUpdated: 2})
	_, errMissing := partitionUpgraded(partitionDeployment(), Batch{DesiredUpdated: 2})
	for name, err := range map[string]error{"Initialize": errInit, "UpgradeBatch": errUpgrade,
		"UpgradeBatch partition": errPartition, "UpgradeBatch before Initialize": errMissing} {
		if err == nil || !strings.Contains(err.Error(), strategyKey) {
			t.Errorf("%s: error %v, want one naming %s", name, err, strategyKey)
		}
	}
	// Finalize still releases the Deployment, with the Deployment defaults, so it never stays frozen.
	got := partitionFinalized(broken, Target{Owner: partitionOwner})
	if got.Spec.Paused || got.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || got.Annotations[strategyKey] != "" {
		t.Errorf("Finalize left paused=%v strategy=%s annotation=%q", got.Spec.Paused, got.Spec.Strategy.Type, got.Annotations[strategyKey])
	}
}

func TestPartitionFinalized(t *testing.T) {
	restored := partitionDeployment()
	restored.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("50%"))}
	// A restart or a paused deletion gives up control only: everything that keeps the Deployment frozen stays.
	keptFrozen := released(partitionOwner, "3")
	delete(keptFrozen.Annotations, rolloutsv1beta1.BatchReleaseControlAnnotation)
	noMarkers := partitionDeployment()
	noMarkers.Spec.Paused = true
	// Paused by the workload webhook for a new revision, before any BatchRelease took control.
	webhookFrozen := noMarkers.DeepCopy()
	webhookFrozen.Labels = map[string]string{rolloutsv1beta1.DeploymentStableRevisionLabel: "5d4f"}
	unpaused := partitionDeployment()
	unpaused.Labels = map[string]string{}
	tests := []struct {
		name string
		in   *appsv1.Deployment
		t    Target
		want *appsv1.Deployment
	}{
		{name: "completed", in: released(partitionOwner, "10"), t: Target{Owner: partitionOwner}, want: restored},
		{name: "still naming a batch, kept frozen", in: released(partitionOwner, "3"),
			t: Target{Owner: partitionOwner, Plan: rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](1)}}, want: keptFrozen},
		{name: "another release's Deployment is left alone", in: released(otherOwner, "3"),
			t: Target{Owner: partitionOwner}, want: released(otherOwner, "3")},
		{name: "a Deployment without markers is left alone", in: noMarkers, t: Target{Owner: partitionOwner}, want: noMarkers},
		{name: "frozen by the webhook only: resumed, its strategy untouched", in: webhookFrozen, t: Target{Owner: partitionOwner}, want: unpaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := partitionFinalized(tt.in, tt.t)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("finalized (-want +got):\n%s", diff)
			}
			assertReleaseOps(t, tt.in, got)
		})
	}
}

// assertReleaseOps: the JSON patch Finalize sends turns d into want.
func assertReleaseOps(t *testing.T, d, want *appsv1.Deployment) {
	t.Helper()
	ops, ok := releaseOps(d, want)
	if !ok {
		t.Fatal("a finalized Deployment differs beyond the fields a release sets")
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	from, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(from)
	if err != nil {
		t.Fatalf("applying %s: %v", raw, err)
	}
	got := &appsv1.Deployment{}
	if err := json.Unmarshal(patched, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized(want), normalized(got)); diff != "" {
		t.Errorf("patched by %s (-want +got):\n%s", raw, diff)
	}
}

// normalized reads an empty map as none, as the API server's JSON does.
func normalized(d *appsv1.Deployment) *appsv1.Deployment {
	d = d.DeepCopy()
	if len(d.Labels) == 0 {
		d.Labels = nil
	}
	if len(d.Annotations) == 0 {
		d.Annotations = nil
	}
	return d
}

func TestReleaseOpsOnlyForWhatAReleaseSets(t *testing.T) {
	d := released(partitionOwner, "10")
	want := partitionFinalized(d, Target{Owner: partitionOwner})
	want.Spec.Template.Labels = map[string]string{"changed": "true"}
	if _, ok := releaseOps(d, want); ok {
		t.Error("a template change went into the release's JSON patch")
	}
}

func TestPartitionFinalizeDone(t *testing.T) {
	complete := partitionDeployment()
	complete.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 10, UpdatedReplicas: 10, AvailableReplicas: 10}
	rolling := complete.DeepCopy()
	rolling.Status.UpdatedReplicas = 6
	stale := complete.DeepCopy()
	stale.Generation = 4
	paused := rolling.DeepCopy()
	paused.Spec.Paused = true
	wait := Target{Plan: rolloutsv1beta1.ReleasePlan{FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType}}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		t    Target
		want bool
	}{
		{name: "immediate", d: rolling, want: true},
		{name: "wait: rolling", d: rolling, t: wait, want: false},
		{name: "wait: spec not observed", d: stale, t: wait, want: false},
		{name: "wait: complete", d: complete, t: wait, want: true},
		{name: "wait: kept paused never completes, so it does not wait", d: paused, t: wait, want: true},
	}
	for _, tt := range tests {
		if got := partitionFinalizeDone(tt.d, tt.t); got != tt.want {
			t.Errorf("%s: partitionFinalizeDone() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// partitionRevisions is a Deployment, the hash of its template and an older template.
func partitionRevisions() (*appsv1.Deployment, string, *corev1.PodTemplateSpec) {
	d := partitionDeployment()
	old := simpleTemplate()
	old.Spec.Containers[0].Image = "nginx:1.26"
	return d, ComputeHash(&d.Spec.Template, nil), old
}

func TestPartitionRolledOut(t *testing.T) {
	d, update, oldTemplate := partitionRevisions()
	available := func(rs appsv1.ReplicaSet) appsv1.ReplicaSet {
		rs.Status.AvailableReplicas = rs.Status.ReadyReplicas
		return rs
	}
	done := available(partitionRS("web-new", update, 10, 10, 200, simpleTemplate()))
	notAvailable := partitionRS("web-new", update, 10, 10, 200, simpleTemplate())
	short := available(partitionRS("web-new", update, 9, 9, 200, simpleTemplate()))
	emptied := partitionRS("web-old", "old", 0, 0, 100, oldTemplate)
	draining := partitionRS("web-old", "old", 0, 0, 100, oldTemplate)
	draining.Status.Replicas = 1
	tests := []struct {
		name string
		sets []appsv1.ReplicaSet
		want bool
	}{
		{"every pod new and available, the old set empty", []appsv1.ReplicaSet{done, emptied}, true},
		{"new pods not available yet", []appsv1.ReplicaSet{notAvailable, emptied}, false},
		{"new set short of the replicas", []appsv1.ReplicaSet{short, emptied}, false},
		{"an old pod still running", []appsv1.ReplicaSet{done, draining}, false},
		{"no new set", []appsv1.ReplicaSet{emptied}, false},
	}
	for _, tt := range tests {
		if got := partitionRolledOut(d, tt.sets); got != tt.want {
			t.Errorf("%s: partitionRolledOut() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Finalize resumes a Deployment once kube-controller-manager has observed the spec of every ReplicaSet of its
// template: it finds the new ReplicaSet by template. A ReplicaSet of an older template only scaled down by the
// last batch does not hold it.
func TestUnobservedTemplate(t *testing.T) {
	d, update, oldTemplate := partitionRevisions()
	unobserved := func(rs appsv1.ReplicaSet) appsv1.ReplicaSet {
		rs.Generation, rs.Status.ObservedGeneration = 3, 2
		return rs
	}
	observed := func(rs appsv1.ReplicaSet) appsv1.ReplicaSet {
		rs.Generation, rs.Status.ObservedGeneration = 3, 3
		return rs
	}
	stampedTemplate := simpleTemplate()
	stampedTemplate.Labels[rolloutsv1beta1.RolloutIDLabel] = "v2"
	tests := []struct {
		name string
		sets []appsv1.ReplicaSet
		want bool
	}{
		{"every set observed", []appsv1.ReplicaSet{observed(partitionRS("web-new", update, 10, 10, 200, simpleTemplate())),
			observed(partitionRS("web-old", "old", 0, 0, 100, oldTemplate))}, false},
		{"the old set's scale-down not observed", []appsv1.ReplicaSet{observed(partitionRS("web-new", update, 10, 10, 200, simpleTemplate())),
			unobserved(partitionRS("web-old", "old", 0, 0, 100, oldTemplate))}, false},
		{"the new set not observed", []appsv1.ReplicaSet{unobserved(partitionRS("web-new", update, 10, 10, 200, simpleTemplate())),
			observed(partitionRS("web-old", "old", 0, 0, 100, oldTemplate))}, true},
		{"the new set stamped and not observed", []appsv1.ReplicaSet{unobserved(partitionRS("web-new", update, 10, 10, 200, stampedTemplate))}, true},
		{"no set", nil, false},
	}
	for _, tt := range tests {
		if got := unobservedTemplate(d, tt.sets); got != tt.want {
			t.Errorf("%s: unobservedTemplate() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func partitionRS(name, hash string, replicas, ready int32, created int64, template *corev1.PodTemplateSpec) appsv1.ReplicaSet {
	tmpl := template.DeepCopy()
	tmpl.Labels["pod-template-hash"] = hash
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web", "pod-template-hash": hash},
			CreationTimestamp: metav1.Unix(created, 0),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-d", Controller: ptr.To(true)}}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: *tmpl},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: ready},
	}
}

func TestPartitionDeploymentInfo(t *testing.T) {
	d := released(partitionOwner, "3")
	update := ComputeHash(&d.Spec.Template, nil)
	oldTemplate := simpleTemplate()
	oldTemplate.Spec.Containers[0].Image = "nginx:1.26"
	old := partitionRS("web-old", "oldhash", 7, 7, 100, oldTemplate)
	older := partitionRS("web-older", "olderhash", 0, 0, 50, oldTemplate)
	current := partitionRS("web-"+update, update, 3, 2, 200, simpleTemplate())
	rolledBack := partitionRS("web-v1", "v1hash", 9, 9, 10, simpleTemplate())
	noLabel := d.DeepCopy()
	delete(noLabel.Labels, rolloutsv1beta1.DeploymentStableRevisionLabel)
	tests := []struct {
		name string
		d    *appsv1.Deployment
		sets []appsv1.ReplicaSet
		want string
	}{
		{name: "in release", d: d, sets: []appsv1.ReplicaSet{old, current, older},
			want: "updated=3/2 stable=stable update=" + update},
		{name: "stable from the largest old set without the label", d: noLabel, sets: []appsv1.ReplicaSet{older, current, old},
			want: "updated=3/2 stable=oldhash update=" + update},
		{name: "template back to an old set keeps its hash", d: noLabel, sets: []appsv1.ReplicaSet{rolledBack, old},
			want: "updated=9/9 stable=oldhash update=v1hash"},
		{name: "no new set yet", d: noLabel, sets: []appsv1.ReplicaSet{old},
			want: "updated=0/0 stable=oldhash update=" + update},
		{name: "no old pods", d: noLabel, sets: []appsv1.ReplicaSet{current, older},
			want: "updated=3/2 stable=" + update + " update=" + update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := partitionDeploymentInfo(tt.d, tt.sets, partitionOwner)
			if err != nil {
				t.Fatal(err)
			}
			got := "updated=" + itoa(info.UpdatedReplicas) + "/" + itoa(info.UpdatedReadyReplicas) +
				" stable=" + info.StableRevision + " update=" + info.UpdateRevision
			if got != tt.want {
				t.Errorf("info %s, want %s", got, tt.want)
			}
			wantPods := "app=web,pod-template-hash=" + info.UpdateRevision
			if info.UpdatedPods.String() != wantPods || info.RevisionLabelKey != "pod-template-hash" ||
				info.Replicas != 10 || !info.Consistent || !info.Controlled {
				t.Errorf("info %+v", info)
			}
		})
	}
}

// A held Deployment counts on its ReplicaSets, so the generation bump of an annotation write does not make it
// inconsistent, nor does the template change the workload webhook paused for a release; a Deployment released,
// or paused by its owner, waits for kube-controller-manager as usual.
func TestPartitionDeploymentInfoConsistent(t *testing.T) {
	held := released(partitionOwner, "3")
	held.Generation = held.Status.ObservedGeneration + 1
	free := partitionDeployment()
	free.Generation = free.Status.ObservedGeneration + 1
	marked := free.DeepCopy()
	marked.Spec.Paused = true
	marked.Annotations[rolloutsv1beta1.InProgressingAnnotation] = `{"rolloutName":"web"}`
	resumed := marked.DeepCopy()
	resumed.Spec.Paused = false
	paused := free.DeepCopy()
	paused.Spec.Paused = true
	for _, tt := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{{"held by a release", held, true}, {"not held", free, false}, {"paused by the webhook for a release", marked, true},
		{"marked but resumed", resumed, false}, {"paused by its owner", paused, false}} {
		info, err := partitionDeploymentInfo(tt.d, nil, partitionOwner)
		if err != nil {
			t.Fatal(err)
		}
		if info.Consistent != tt.want {
			t.Errorf("%s: consistent = %v, want %v", tt.name, info.Consistent, tt.want)
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func TestPartitionGone(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctl := NewDeploymentPartition(fake.NewClientBuilder().WithScheme(scheme).Build(),
		Target{Namespace: "ns", Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}})
	if _, err := ctl.Read(context.Background()); !errors.Is(err, ErrWorkloadGone) {
		t.Errorf("Read() error = %v, want ErrWorkloadGone", err)
	}
	if done, err := ctl.Finalize(context.Background()); !done || err != nil {
		t.Errorf("Finalize() = %v, %v; want done", done, err)
	}
}

// An aborted release lowers the partition and marks the Deployment; the next batch drops the mark.
func TestPartitionUpgradedAbort(t *testing.T) {
	d := released(partitionOwner, "5")
	got, err := partitionUpgraded(d, Batch{DesiredUpdated: 0, Abort: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got[strategyKey], `"partition":0}`) || got[ReleaseAbortedAnnotation] != "true" {
		t.Errorf("aborted: changes %v, want partition 0 and the aborted mark", got)
	}
	d = released(partitionOwner, "0")
	d.Annotations[ReleaseAbortedAnnotation] = "true"
	if got, _ = partitionUpgraded(d, Batch{DesiredUpdated: 0, Abort: true}); len(got) != 0 {
		t.Errorf("already aborted: changes %v, want none", got)
	}
	got, _ = partitionUpgraded(d, Batch{DesiredUpdated: 1})
	if v, ok := got[ReleaseAbortedAnnotation]; !ok || v != "" || !strings.HasSuffix(got[strategyKey], `"partition":1}`) {
		t.Errorf("retried: changes %v, want the mark removed and partition 1", got)
	}
}
