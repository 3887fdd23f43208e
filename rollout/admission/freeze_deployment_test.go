package admission

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

const deploymentUID = types.UID("deploy-uid")

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "echo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

func deployment(image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns", UID: deploymentUID},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "echo"}},
			Template: podTemplate(image),
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
				},
			},
		},
	}
}

// replicaSet is an active ReplicaSet of deployment() running image at a revision.
func replicaSet(hash, image, revision string) appsv1.ReplicaSet {
	tpl := podTemplate(image)
	tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "echo-" + hash, Namespace: "ns",
			Labels:            map[string]string{"app": "echo", appsv1.DefaultDeploymentUniqueLabelKey: hash},
			Annotations:       map[string]string{deploymentRevisionAnnotation: revision},
			CreationTimestamp: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "echo", UID: deploymentUID, Controller: ptr.To(true),
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Template: tpl},
	}
}

func inProgressing(d *appsv1.Deployment) {
	setAnnotation(d, rolloutsv1beta1.InProgressingAnnotation, `{"rolloutName":"demo"}`)
}

// frozen is what entering a release does to a Deployment whose stable ReplicaSet has hash.
func frozen(hash string) func(d *appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		if hash != "" {
			setLabel(d, rolloutsv1beta1.DeploymentStableRevisionLabel, hash)
		}
		d.Spec.Paused = true
		inProgressing(d)
	}
}

func routedRollout() *rolloutsv1beta1.Rollout {
	r := canaryRollout()
	r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
	return r
}

func strategyAnnotation(t *testing.T, s rolloutsv1beta1.DeploymentStrategy) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type deploymentCase struct {
	name    string
	old     *appsv1.Deployment
	cur     *appsv1.Deployment
	rollout *rolloutsv1beta1.Rollout
	rss     []appsv1.ReplicaSet
	// want is applied to a copy of cur to give the expected result; nil expects no change.
	want    func(d *appsv1.Deployment)
	wantErr string
}

func runDeploymentCases(t *testing.T, cases []deploymentCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			curBefore := tc.cur.DeepCopy()
			got, err := FreezeDeployment(tc.old, tc.cur, tc.rollout, tc.rss)
			if !errorMatches(err, tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(curBefore, tc.cur); diff != "" {
				t.Errorf("the input was modified (-before +after):\n%s", diff)
			}
			var want *appsv1.Deployment
			if tc.want != nil {
				want = tc.cur.DeepCopy()
				if want.UID == "" {
					want.UID = tc.old.UID
				}
				tc.want(want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func errorMatches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

func withAnnotation(d *appsv1.Deployment, key, value string) *appsv1.Deployment {
	setAnnotation(d, key, value)
	return d
}

func TestFreezeDeploymentEntering(t *testing.T) {
	v1RS := replicaSet("h1", "echo:v1", "1")
	otherOwner := replicaSet("x1", "echo:v1", "1")
	otherOwner.OwnerReferences[0].UID = "someone-else"
	scaledDown := replicaSet("h0", "echo:v0", "0")
	scaledDown.Spec.Replicas = ptr.To[int32](0)
	deleting := replicaSet("h9", "echo:v9", "9")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	noUID := deployment("echo:v2")
	noUID.UID = ""
	hashOnly := deployment("echo:v1")
	hashOnly.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "h1"
	zero := deployment("echo:v2")
	zero.Spec.Replicas = ptr.To[int32](0)
	labelled := deployment("echo:v1")
	labelled.Labels = map[string]string{"team": "a"}
	newer := replicaSet("h2", "echo:v2", "2")
	newer.CreationTimestamp = metav1.NewTime(v1RS.CreationTimestamp.Add(-time.Hour))

	runDeploymentCases(t, []deploymentCase{
		{name: "new template", old: deployment("echo:v1"), cur: deployment("echo:v2"), rollout: canaryRollout(),
			rss: []appsv1.ReplicaSet{v1RS}, want: frozen("h1")},
		{name: "no matching Rollout", old: deployment("echo:v1"), cur: deployment("echo:v2"), rss: []appsv1.ReplicaSet{v1RS}},
		{name: "scaled to zero", old: deployment("echo:v1"), cur: zero, rollout: canaryRollout(), rss: []appsv1.ReplicaSet{v1RS}},
		{name: "metadata change only", old: deployment("echo:v1"), cur: labelled, rollout: canaryRollout(), rss: []appsv1.ReplicaSet{v1RS}},
		{name: "pod-template-hash label only", old: deployment("echo:v1"), cur: hashOnly, rollout: canaryRollout(), rss: []appsv1.ReplicaSet{v1RS}},
		{name: "new rollout-id without template change",
			old: withAnnotation(deployment("echo:v1"), rolloutsv1beta1.RolloutIDLabel, "r1"),
			cur: withAnnotation(deployment("echo:v1"), rolloutsv1beta1.RolloutIDLabel, "r2"), rollout: canaryRollout(),
			rss: []appsv1.ReplicaSet{v1RS}, want: frozen("")},
		{name: "same rollout-id with template change",
			old: withAnnotation(deployment("echo:v1"), rolloutsv1beta1.RolloutIDLabel, "r1"),
			cur: withAnnotation(deployment("echo:v2"), rolloutsv1beta1.RolloutIDLabel, "r1"), rollout: canaryRollout(),
			rss: []appsv1.ReplicaSet{v1RS}},
		{name: "rollout-id removed without template change",
			old: withAnnotation(deployment("echo:v1"), rolloutsv1beta1.RolloutIDLabel, "r1"),
			cur: deployment("echo:v1"), rollout: canaryRollout(), rss: []appsv1.ReplicaSet{v1RS}},
		{name: "no ReplicaSet yet", old: deployment("echo:v1"), cur: deployment("echo:v2"), rollout: canaryRollout()},
		{name: "inactive and foreign ReplicaSets are ignored", old: deployment("echo:v1"), cur: deployment("echo:v2"), rollout: routedRollout(),
			rss: []appsv1.ReplicaSet{otherOwner, scaledDown, deleting, v1RS}, want: frozen("h1")},
		{name: "only foreign ReplicaSets", old: deployment("echo:v1"), cur: deployment("echo:v2"), rollout: canaryRollout(),
			rss: []appsv1.ReplicaSet{otherOwner}},
		{name: "two revisions with traffic routing", old: deployment("echo:v1"), cur: deployment("echo:v3"), rollout: routedRollout(),
			rss: []appsv1.ReplicaSet{v1RS, replicaSet("h2", "echo:v2", "2")}},
		{name: "two revisions without traffic routing: the oldest is stable", old: deployment("echo:v2"), cur: deployment("echo:v3"),
			rollout: canaryRollout(), rss: []appsv1.ReplicaSet{newer, v1RS}, want: frozen("h1")},
		{name: "rollback: the revision being left is stable", old: deployment("echo:v2"), cur: deployment("echo:v1"),
			rollout: canaryRollout(), rss: []appsv1.ReplicaSet{v1RS, newer}, want: frozen("h2")},
		{name: "empty UID is taken from the stored object", old: deployment("echo:v1"), cur: noUID, rollout: canaryRollout(),
			rss: []appsv1.ReplicaSet{v1RS}, want: frozen("h1")},
	})
}

func TestMissesReplicaSets(t *testing.T) {
	withPods := func(image string) *appsv1.Deployment {
		d := deployment(image)
		d.Status.Replicas = 4
		return d
	}
	scaledDown := replicaSet("h0", "echo:v0", "0")
	scaledDown.Spec.Replicas = ptr.To[int32](0)
	tests := []struct {
		name     string
		old, cur *appsv1.Deployment
		rss      []appsv1.ReplicaSet
		want     bool
	}{
		{"new template, pods reported, no ReplicaSet read", withPods("echo:v1"), deployment("echo:v2"), nil, true},
		{"only an inactive ReplicaSet read", withPods("echo:v1"), deployment("echo:v2"), []appsv1.ReplicaSet{scaledDown}, true},
		{"an active ReplicaSet read", withPods("echo:v1"), deployment("echo:v2"), []appsv1.ReplicaSet{replicaSet("h1", "echo:v1", "1")}, false},
		{"no pods reported: nothing to hold", deployment("echo:v1"), deployment("echo:v2"), nil, false},
		{"same template", withPods("echo:v1"), deployment("echo:v1"), nil, false},
		{"already in a release", withPods("echo:v1"), withAnnotation(deployment("echo:v2"), rolloutsv1beta1.InProgressingAnnotation, `{"rolloutName":"demo"}`), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MissesReplicaSets(tt.old, tt.cur, tt.rss); got != tt.want {
				t.Errorf("MissesReplicaSets = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFreezeDeploymentProgressing(t *testing.T) {
	partition := func(image string, s rolloutsv1beta1.DeploymentStrategy) *appsv1.Deployment {
		d := deployment(image)
		inProgressing(d)
		setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
		return d
	}
	settled := rolloutsv1beta1.DeploymentStrategy{
		RollingStyle: rolloutsv1beta1.PartitionRollingStyle, Partition: intstr.FromInt32(1),
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))},
	}
	frozenPartition := func(d *appsv1.Deployment) *appsv1.Deployment {
		d.Spec.Paused = true
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return d
	}
	// movedInto: the Deployment's own rolling update settings move into the strategy annotation.
	movedInto := func(s rolloutsv1beta1.DeploymentStrategy) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			s.RollingUpdate = d.Spec.Strategy.RollingUpdate
			setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
			frozenPartition(d)
		}
	}
	userRollingUpdate := &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(2)), MaxSurge: ptr.To(intstr.FromInt32(0))}
	edited := partition("echo:v2", settled)
	edited.Spec.Strategy.RollingUpdate = userRollingUpdate
	lowerCase := settled
	lowerCase.RollingStyle = "partition"
	noDefaults := rolloutsv1beta1.DeploymentStrategy{RollingStyle: rolloutsv1beta1.PartitionRollingStyle}
	bothZero := rolloutsv1beta1.DeploymentStrategy{RollingStyle: rolloutsv1beta1.PartitionRollingStyle,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("0%"))}}

	runDeploymentCases(t, []deploymentCase{
		{name: "partition: native rolling update is switched off", old: frozenPartition(partition("echo:v2", settled)),
			cur: partition("echo:v2", settled), rollout: canaryRollout(), want: movedInto(settled)},
		{name: "partition: settled", old: frozenPartition(partition("echo:v2", settled)),
			cur: frozenPartition(partition("echo:v2", settled)), rollout: canaryRollout()},
		{name: "partition: style in lower case", old: frozenPartition(partition("echo:v2", lowerCase)),
			cur: partition("echo:v2", lowerCase), rollout: canaryRollout(), want: movedInto(lowerCase)},
		{name: "partition: edited rolling update moves into the annotation", old: frozenPartition(partition("echo:v2", settled)),
			cur: edited, rollout: canaryRollout(), want: func(d *appsv1.Deployment) {
				frozenPartition(d)
				s := settled
				s.RollingUpdate = userRollingUpdate
				setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
			}},
		{name: "partition: a new revision pauses the partition", old: frozenPartition(partition("echo:v2", settled)),
			cur: frozenPartition(partition("echo:v3", settled)), rollout: canaryRollout(), want: func(d *appsv1.Deployment) {
				s := settled
				s.Paused = true
				setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
			}},
		{name: "partition: missing rolling update settings are defaulted", old: frozenPartition(partition("echo:v2", noDefaults)),
			cur: frozenPartition(partition("echo:v2", noDefaults)), rollout: canaryRollout(), want: func(d *appsv1.Deployment) {
				s := noDefaults
				s.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}
				setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
			}},
		{name: "partition: both limits zero", old: frozenPartition(partition("echo:v2", bothZero)),
			cur: frozenPartition(partition("echo:v2", bothZero)), rollout: canaryRollout(), want: func(d *appsv1.Deployment) {
				s := bothZero
				s.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("0%"))}
				setAnnotation(d, rolloutsv1beta1.DeploymentStrategyAnnotation, strategyAnnotation(t, s))
			}},
		{name: "partition: no matching Rollout", old: frozenPartition(partition("echo:v2", settled)), cur: partition("echo:v2", settled)},
	})
}

func TestFreezeDeploymentProgressingBlueGreenAndCanary(t *testing.T) {
	blueGreen := func(image string) *appsv1.Deployment {
		d := deployment(image)
		inProgressing(d)
		setAnnotation(d, rolloutsv1beta1.OriginalDeploymentStrategyAnnotation, `{"maxSurge":"25%"}`)
		return d
	}
	recreate := func(d *appsv1.Deployment) *appsv1.Deployment {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return d
	}
	pause := func(d *appsv1.Deployment) { d.Spec.Paused = true }
	paused := func(d *appsv1.Deployment) *appsv1.Deployment {
		pause(d)
		return d
	}
	canary := func(image string) *appsv1.Deployment {
		d := deployment(image)
		inProgressing(d)
		return d
	}
	runDeploymentCases(t, []deploymentCase{
		{name: "blue-green: a new revision is paused", old: blueGreen("echo:v2"), cur: blueGreen("echo:v3"), rollout: blueGreenRollout(),
			want: pause},
		{name: "blue-green: other edits pass", old: blueGreen("echo:v2"), cur: blueGreen("echo:v2"), rollout: blueGreenRollout()},
		{name: "blue-green: RollingUpdate is kept", old: blueGreen("echo:v2"), cur: recreate(blueGreen("echo:v2")), rollout: blueGreenRollout(),
			want: func(d *appsv1.Deployment) { d.Spec.Strategy = blueGreen("echo:v2").Spec.Strategy }},
		{name: "canary: stays paused", old: paused(canary("echo:v2")), cur: canary("echo:v2"), rollout: canaryRollout(),
			want: pause},
		{name: "canary: settled", old: paused(canary("echo:v2")), cur: paused(canary("echo:v3")), rollout: canaryRollout()},
		{name: "canary: switch to Recreate is denied", old: paused(canary("echo:v2")), cur: recreate(paused(canary("echo:v2"))),
			rollout: canaryRollout(), wantErr: "spec.strategy.type: Forbidden: may not change to Recreate while Rollout demo releases this Deployment"},
		{name: "canary: Recreate from before the release", old: recreate(paused(canary("echo:v2"))), cur: recreate(canary("echo:v2")),
			rollout: canaryRollout(), want: pause},
		{name: "malformed in-progressing", old: deployment("echo:v2"),
			cur: withAnnotation(deployment("echo:v2"), rolloutsv1beta1.InProgressingAnnotation, "{"), rollout: canaryRollout(),
			wantErr: "annotation rollouts.kruise.io/in-progressing is not valid"},
		{name: "malformed deployment-strategy", old: canary("echo:v2"),
			cur: withAnnotation(canary("echo:v2"), rolloutsv1beta1.DeploymentStrategyAnnotation, `{"partition":[]}`), rollout: canaryRollout(),
			wantErr: "annotation rollouts.kruise.io/deployment-strategy is not valid"},
	})
}

func TestFreezeDeploymentNil(t *testing.T) {
	if got, err := FreezeDeployment(nil, deployment("a"), canaryRollout(), nil); got != nil || err != nil {
		t.Errorf("FreezeDeployment(nil old) = %v, %v", got, err)
	}
	if got, err := FreezeDeployment(deployment("a"), nil, canaryRollout(), nil); got != nil || err != nil {
		t.Errorf("FreezeDeployment(nil cur) = %v, %v", got, err)
	}
}
