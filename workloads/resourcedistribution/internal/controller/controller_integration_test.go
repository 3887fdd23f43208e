package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	fromKey = "kruise.io/resourcedistribution.resource.from"
	hashKey = "kruise.io/resourcedistribution.resource.hashcode"
	timeKey = "kruise.io/resourcedistribution.resource.distributed.timestamp"
)

// hashOf is upstream's hash of the distribution's resource as the API server serves it.
func hashOf(rd *kruiseappsv1alpha1.ResourceDistribution) string {
	sum := sha256.Sum256(rd.Spec.Resource.Raw)
	return hex.EncodeToString(sum[:])
}

// isCopy tells whether cm is rd's copy of the current resource with data.
func isCopy(cm *corev1.ConfigMap, rd *kruiseappsv1alpha1.ResourceDistribution, lives string) bool {
	if cm == nil {
		return false
	}
	ref := metav1.GetControllerOf(cm)
	return cm.Data["lives"] == lives && cm.Labels["app"] == "game" && cm.Annotations[fromKey] == rd.Name &&
		cm.Annotations[hashKey] == hashOf(rd) && cm.Annotations[timeKey] != "" &&
		ref != nil && ref.Kind == "ResourceDistribution" && ref.APIVersion == "apps.kruise.io/v1alpha1" && ref.UID == rd.UID
}

// The seed's targets: listed namespaces and those its selector picks, minus the excluded; a listed one that
// does not exist is reported, and no other namespace gets a copy.
func TestDistributesToTargets(t *testing.T) {
	t.Parallel()
	e := start(t)
	group := map[string]string{"group": e.id}
	listed, picked, excluded, other := e.namespace(t, nil), e.namespace(t, group), e.namespace(t, group), e.namespace(t, nil)
	missing := e.id + "-missing"
	rd := e.distribution(t, configMap("game-demo", map[string]string{"lives": "3"}), kruiseappsv1alpha1.ResourceDistributionTargets{
		IncludedNamespaces:     list(listed, missing),
		NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: group},
		ExcludedNamespaces:     list(excluded),
	})
	got := e.waitStatus(t, rd, "two copies, one namespace missing", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.Desired == 3 && s.Succeeded == 2 && s.Failed == 1
	})
	for _, ns := range []string{listed, picked} {
		if cm, err := e.configMapIn(t.Context(), ns, "game-demo"); err != nil || !isCopy(cm, got, "3") {
			t.Errorf("copy in %s: %+v (%v)", ns, cm, err)
		}
	}
	for _, ns := range []string{excluded, other} {
		if cm, err := e.configMapIn(t.Context(), ns, "game-demo"); cm != nil || err != nil {
			t.Errorf("a copy in %s, which is not a target: %+v (%v)", ns, cm, err)
		}
	}
	expectConditions(t, got, map[kruiseappsv1alpha1.ResourceDistributionConditionType][]string{
		kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists: {missing},
	})
	if c := condition(got.Status, kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists); c.Reason != "namespace not found or is terminating" {
		t.Errorf("NamespaceNotExists reason %q", c.Reason)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	// The missing namespace appears: it gets its copy and the condition clears.
	e.namedNamespace(t, missing)
	e.waitConfigMap(t, missing, "game-demo", "a copy in the new namespace", func(cm *corev1.ConfigMap) bool { return isCopy(cm, got, "3") })
	got = e.waitStatus(t, rd, "all three distributed", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.Desired == 3 && s.Succeeded == 3 && s.Failed == 0
	})
	expectConditions(t, got, nil)
}

// expectConditions checks the six conditions: those of failed list their namespaces and are True, the others
// are False with reason Succeeded.
func expectConditions(t *testing.T, rd *kruiseappsv1alpha1.ResourceDistribution, failed map[kruiseappsv1alpha1.ResourceDistributionConditionType][]string) {
	t.Helper()
	if len(rd.Status.Conditions) != 6 {
		t.Errorf("%d conditions, want upstream's 6: %+v", len(rd.Status.Conditions), rd.Status.Conditions)
	}
	for _, c := range rd.Status.Conditions {
		want := failed[c.Type]
		switch {
		case len(want) == 0 && (c.Status != "False" || c.Reason != "Succeeded" || len(c.FailedNamespaces) > 0):
			t.Errorf("condition %s: %+v, want False/Succeeded", c.Type, c)
		case len(want) > 0 && (c.Status != "True" || !slices.Equal(c.FailedNamespaces, want)):
			t.Errorf("condition %s: %+v, want True for %v", c.Type, c, want)
		}
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
}

// Namespaces that start or stop matching the selector gain or lose their copy; a new matching namespace
// gets one.
func TestFollowsNamespaceLabels(t *testing.T) {
	t.Parallel()
	e := start(t)
	group := map[string]string{"group": e.id}
	leaving, joining := e.namespace(t, group), e.namespace(t, nil)
	rd := e.distribution(t, configMap("labelled", map[string]string{"lives": "1"}), kruiseappsv1alpha1.ResourceDistributionTargets{
		NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: group},
	})
	e.waitStatus(t, rd, "one copy", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool { return s.Succeeded == 1 })
	relabel(t, e, leaving, nil)
	relabel(t, e, joining, group)
	e.waitConfigMap(t, leaving, "labelled", "the copy gone from the namespace that left", func(cm *corev1.ConfigMap) bool { return cm == nil })
	e.waitConfigMap(t, joining, "labelled", "a copy in the namespace that joined", func(cm *corev1.ConfigMap) bool { return cm != nil })
	fresh := e.namespace(t, group)
	e.waitConfigMap(t, fresh, "labelled", "a copy in a new namespace", func(cm *corev1.ConfigMap) bool { return cm != nil })
	e.waitStatus(t, rd, "two copies", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.Desired == 2 && s.Succeeded == 2
	})
}

func relabel(t *testing.T, e *env, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	managertest.Update(t, e.c, ns, func(ns *corev1.Namespace) { ns.Labels = labels })
}

// An edit of spec.resource reaches every copy; a copy edited or deleted by hand is restored; what others
// add to a copy's metadata stays.
func TestResyncsAndRestores(t *testing.T) {
	t.Parallel()
	e := start(t)
	a, b := e.namespace(t, nil), e.namespace(t, nil)
	rd := e.distribution(t, configMap("synced", map[string]string{"lives": "3"}), kruiseappsv1alpha1.ResourceDistributionTargets{
		IncludedNamespaces: list(a, b),
	})
	rd = e.waitStatus(t, rd, "two copies", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool { return s.Succeeded == 2 })
	editConfigMap(t, e, a, "synced", func(cm *corev1.ConfigMap) {
		cm.Data["lives"] = "99"
		cm.Labels["team"] = "ours"
		cm.Finalizers = append(cm.Finalizers, "example.com/keep")
	})
	e.waitConfigMap(t, a, "synced", "the edited copy restored", func(cm *corev1.ConfigMap) bool {
		return cm != nil && cm.Data["lives"] == "3" && cm.Labels["team"] == "ours"
	})
	if err := e.c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "synced"}}); err != nil {
		t.Fatal(err)
	}
	e.waitConfigMap(t, b, "synced", "the deleted copy recreated", func(cm *corev1.ConfigMap) bool { return isCopy(cm, rd, "3") })
	e.update(t, rd, func(rd *kruiseappsv1alpha1.ResourceDistribution) {
		rd.Spec.Resource.Raw = []byte(configMap("synced", map[string]string{"lives": "5"}))
	})
	got := e.waitStatus(t, rd, "the new generation distributed", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.ObservedGeneration == 2 && s.Succeeded == 2
	})
	for _, ns := range []string{a, b} {
		e.waitConfigMap(t, ns, "synced", "the copy in "+ns+" updated", func(cm *corev1.ConfigMap) bool { return isCopy(cm, got, "5") })
	}
	cm, err := e.configMapIn(t.Context(), a, "synced")
	if err != nil || cm.Labels["team"] != "ours" || !slices.Contains(cm.Finalizers, "example.com/keep") {
		t.Errorf("the copy lost what others added: %+v (%v)", cm, err)
	}
	editConfigMap(t, e, a, "synced", func(cm *corev1.ConfigMap) { cm.Finalizers = nil })
}

func editConfigMap(t *testing.T, e *env, ns, name string, edit func(*corev1.ConfigMap)) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	managertest.Update(t, e.c, cm, func(cm *corev1.ConfigMap) {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		edit(cm)
	})
}

// A same-named object the distribution does not own is never written: ConflictOccurred names its namespace.
func TestConflictIsLeftAlone(t *testing.T) {
	t.Parallel()
	e := start(t)
	mine, theirs := e.namespace(t, nil), e.namespace(t, nil)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "shared"}, Data: map[string]string{"lives": "theirs"}}
	managertest.Create(t, e.c, foreign)
	rd := e.distribution(t, configMap("shared", map[string]string{"lives": "3"}), kruiseappsv1alpha1.ResourceDistributionTargets{
		IncludedNamespaces: list(mine, theirs),
	})
	got := e.waitStatus(t, rd, "a conflict", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.Desired == 2 && s.Succeeded == 1 && s.Failed == 1
	})
	expectConditions(t, got, map[kruiseappsv1alpha1.ResourceDistributionConditionType][]string{
		kruiseappsv1alpha1.ResourceDistributionConflictOccurred: {theirs},
	})
	cm, err := e.configMapIn(t.Context(), theirs, "shared")
	if err != nil || cm.Data["lives"] != "theirs" || cm.Annotations[fromKey] != "" || len(cm.OwnerReferences) > 0 {
		t.Errorf("the foreign ConfigMap was written: %+v (%v)", cm, err)
	}
	// Once the other object goes, the distribution takes the namespace.
	if err := e.c.Delete(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	e.poke(t, rd)
	e.waitConfigMap(t, theirs, "shared", "the copy after the conflict ended", func(cm *corev1.ConfigMap) bool { return isCopy(cm, got, "3") })
}

// A Secret written with stringData is distributed as the API server stores it, stays settled (no rewrite
// loop), and its copies go with the distribution.
func TestSecretCopiesGoWithTheDistribution(t *testing.T) {
	t.Parallel()
	e := start(t)
	a := e.namespace(t, nil)
	rd := e.distribution(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull"},"stringData":{"token":"s3cret"}}`,
		kruiseappsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: list(a)})
	e.waitStatus(t, rd, "one copy", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool { return s.Succeeded == 1 })
	secret := &corev1.Secret{}
	eventually(t, "the secret copy", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: a, Name: "pull"}, secret)
		return err == nil && string(secret.Data["token"]) == "s3cret" && secret.Type == corev1.SecretTypeOpaque, err
	})
	version := secret.ResourceVersion
	e.poke(t, rd)
	e.waitStatus(t, rd, "the poke reconciled", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool { return s.ObservedGeneration == 2 })
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: a, Name: "pull"}, secret); err != nil || secret.ResourceVersion != version {
		t.Errorf("a current secret copy was rewritten: version %s, was %s (%v)", secret.ResourceVersion, version, err)
	}
	if err := e.c.Delete(t.Context(), rd, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy garbage-collected", func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: a, Name: "pull"}, &corev1.Secret{})
		return apierrors.IsNotFound(err), fmt.Errorf("get: %w", err)
	})
}

// allNamespaces reaches every namespace but kube-system and kube-public, and excluded ones.
func TestAllNamespacesSkipsSystemNamespaces(t *testing.T) {
	t.Parallel()
	e := start(t)
	a, excluded := e.namespace(t, nil), e.namespace(t, nil)
	name := e.id + "-all"
	rd := e.distribution(t, configMap(name, map[string]string{"lives": "1"}), kruiseappsv1alpha1.ResourceDistributionTargets{
		AllNamespaces: true, ExcludedNamespaces: list(excluded),
	})
	e.waitConfigMap(t, a, name, "a copy in the test's namespace", func(cm *corev1.ConfigMap) bool { return cm != nil })
	e.waitConfigMap(t, metav1.NamespaceDefault, name, "a copy in default", func(cm *corev1.ConfigMap) bool { return cm != nil })
	e.waitStatus(t, rd, "every namespace counted", func(s kruiseappsv1alpha1.ResourceDistributionStatus) bool {
		return s.Desired >= 2 && s.Succeeded >= 2
	})
	for _, ns := range []string{metav1.NamespaceSystem, metav1.NamespacePublic, excluded} {
		if cm, err := e.configMapIn(t.Context(), ns, name); cm != nil || err != nil {
			t.Errorf("a copy in %s: %+v (%v)", ns, cm, err)
		}
	}
}
