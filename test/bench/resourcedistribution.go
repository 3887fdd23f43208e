package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// rdNamespaces is the number of target namespaces.
	rdNamespaces = 1000
	// rdNamespaceWorkers is how many namespace creates the setup keeps in flight.
	rdNamespaceWorkers = 32
	// rdTargetLabel marks the target namespaces: the distribution selects them by it, so that the cluster's own
	// namespaces (default, kube-node-lease, the manager's) are not counted.
	rdTargetLabel = "bench.flotilla.dev/rd-target"
	rdName        = "bench-distribution"
	rdSecretName  = "bench-secret"
	rdSecretKey   = "value"
	// rdWritesTarget bounds the manager's writes per namespace per change (issue's target).
	rdWritesTarget = 1.1
	// rdChangeTimeout bounds each measured change.
	rdChangeTimeout = 5 * time.Minute
	// resourceDistributionGateFlag turns on the manager's ResourceDistribution controller, off by default as
	// upstream's.
	resourceDistributionGateFlag = "--feature-gates=ResourceDistributionGate=true"
)

var resourceDistributionsResource = kruiseappsv1alpha1.GroupVersion.WithResource("resourcedistributions")

// rdCounters tell where a change's writes went.
var rdCounters = []counterSpec{
	{"copies created", "flotilla_resourcedistribution_copy_operations_total", map[string]string{"operation": "create", "result": "success"}},
	{"copies updated", "flotilla_resourcedistribution_copy_operations_total", map[string]string{"operation": "update", "result": "success"}},
	writeConflicts,
	requestsRejected,
}

// resourceDistribution distributes one Secret to 1,000 namespaces, then edits it.
func resourceDistribution() Scenario {
	return Scenario{
		Name: "resourcedistribution",
		Description: fmt.Sprintf("a ResourceDistribution of one Secret to the %d namespaces its namespaceLabelSelector matches, "+
			"from its creation until its status shows desired = succeeded = %d, then from an edit of the Secret's data in "+
			"spec.resource until the status shows the same at the new generation; every copy is checked for the data "+
			"value of each change; no nodes", rdNamespaces, rdNamespaces),
		Cluster: cluster.Options{},
		Timeout: 10 * time.Minute,
		Run:     runResourceDistribution,
	}
}

// rdChange is one measured change: the distribution's creation or its edit.
type rdChange struct {
	Name string
	// Took is the change sent -> the status showing every target succeeded at the change's generation.
	Took     time.Duration
	Phase    Phase
	Counters []float64
}

func runResourceDistribution(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"namespaces": rdNamespaces, "resourcedistributions": 1, "secrets": rdNamespaces}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	begin := time.Now()
	if err := createTargetNamespaces(ctx, env.Kube, rdNamespaces); err != nil {
		return err
	}
	env.Logf("%d namespaces created in %v", rdNamespaces, time.Since(begin).Round(time.Millisecond))
	if err := env.StartManager(ctx, resourceDistributionGateFlag); err != nil {
		return err
	}
	done := newMarks()
	f, err := followDistribution(ctx, dyn, done)
	if err != nil {
		return err
	}
	if err := sleep(ctx, watchConnect); err != nil {
		return errors.Join(err, f.stop())
	}
	changes, err := runDistributionChanges(ctx, env, dyn, done)
	if err = errors.Join(err, f.stop()); err != nil {
		return err
	}
	addDistributionMetrics(res, changes)
	return nil
}

// runDistributionChanges creates the distribution, then edits its Secret's data, each measured until the status
// shows every copy written, each checked against the copies.
func runDistributionChanges(ctx context.Context, env *Env, dyn dynamic.Interface, done *marks) ([]rdChange, error) {
	create, err := timeDistributionChange(ctx, env, "create", "v1", done, func(ctx context.Context) (int64, error) {
		return 1, createObject(ctx, dyn, resourceDistributionsResource, benchDistribution("v1"))
	})
	if err != nil {
		return nil, err
	}
	edit, err := timeDistributionChange(ctx, env, "edit", "v2", done, func(ctx context.Context) (int64, error) {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"resource": map[string]any{
			"data": map[string]string{rdSecretKey: base64.StdEncoding.EncodeToString([]byte("v2"))}}}})
		if err != nil {
			return 0, err
		}
		u, err := dyn.Resource(resourceDistributionsResource).Patch(ctx, rdName, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return 0, fmt.Errorf("editing the distribution: %w", err)
		}
		return u.GetGeneration(), nil
	})
	if err != nil {
		return nil, err
	}
	return []rdChange{create, edit}, nil
}

// timeDistributionChange measures one change (which returns the generation it made) until the status shows it
// done, then checks that every copy carries value.
func timeDistributionChange(ctx context.Context, env *Env, name, value string, done *marks,
	change func(context.Context) (int64, error)) (rdChange, error) {
	c := rdChange{Name: name}
	ctx, cancel := context.WithTimeout(ctx, rdChangeTimeout)
	defer cancel()
	env.Logf("%s: sending", name)
	var err error
	c.Phase, err = env.Measure(ctx, nil, func(ctx context.Context) error {
		before, err := env.ManagerSamples(ctx)
		if err != nil {
			return err
		}
		begin := time.Now()
		generation, err := change(ctx)
		if err != nil {
			return err
		}
		m, err := done.await(ctx, generation)
		if err != nil {
			return fmt.Errorf("waiting for the status of generation %d: %w", generation, err)
		}
		c.Took = m.At.Sub(begin)
		after, err := env.ManagerSamples(ctx)
		if err != nil {
			return err
		}
		c.Counters = counterRises(rdCounters, before, after)
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	n, err := copiesWithValue(ctx, env.Kube, value)
	if err != nil {
		return c, err
	}
	env.Logf("%s: status showed %d succeeded after %v; %d copies hold %q; manager %d writes", name, rdNamespaces,
		c.Took.Round(time.Millisecond), n, value, writes(c.Phase.Requests))
	if n != rdNamespaces {
		return c, fmt.Errorf("%s: the status showed %d namespaces succeeded, but %d copies hold %q", name, rdNamespaces, n, value)
	}
	return c, nil
}

// createTargetNamespaces creates n namespaces carrying rdTargetLabel.
func createTargetNamespaces(ctx context.Context, kube kubernetes.Interface, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(rdNamespaceWorkers)
	for i := range n {
		g.Go(func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-rd-%04d", i),
				Labels: map[string]string{rdTargetLabel: "true"}}}
			_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// benchDistribution distributes an Opaque Secret holding value to the labelled namespaces.
func benchDistribution(value string) *kruiseappsv1alpha1.ResourceDistribution {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: rdSecretName},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{rdSecretKey: []byte(value)},
	}
	raw, err := json.Marshal(secret)
	if err != nil {
		panic(err) // a Secret always encodes
	}
	return &kruiseappsv1alpha1.ResourceDistribution{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "ResourceDistribution"},
		ObjectMeta: metav1.ObjectMeta{Name: rdName, Labels: map[string]string{BenchLabel: "resourcedistribution"}},
		Spec: kruiseappsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: raw},
			Targets: kruiseappsv1alpha1.ResourceDistributionTargets{
				NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{rdTargetLabel: "true"}}},
		},
	}
}

// followDistribution follows the distribution, which does not exist yet, marking the generation of each status
// that shows every target succeeded at the distribution's current generation.
func followDistribution(ctx context.Context, dyn dynamic.Interface, done *marks) (*follower, error) {
	return followNamed(ctx, dyn, resourceDistributionsResource, "", rdName,
		func(at time.Time, obj runtime.Object) {
			rd, err := decode[kruiseappsv1alpha1.ResourceDistribution](obj)
			if err == nil && distributed(rd, rdNamespaces) {
				done.add(rd.Status.ObservedGeneration, at)
			}
		})
}

// distributed: the status is of the current generation and shows want targets, every one succeeded.
func distributed(rd *kruiseappsv1alpha1.ResourceDistribution, want int32) bool {
	s := rd.Status
	return s.ObservedGeneration == rd.Generation && s.Desired == want && s.Succeeded == want && s.Failed == 0
}

// copiesWithValue counts the copies, in any namespace, whose data holds value.
func copiesWithValue(ctx context.Context, kube kubernetes.Interface, value string) (int, error) {
	list, err := kube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx,
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", rdSecretName).String()})
	if err != nil {
		return 0, fmt.Errorf("listing the copies: %w", err)
	}
	n := 0
	for i := range list.Items {
		s := &list.Items[i]
		if string(s.Data[rdSecretKey]) == value && s.Annotations[kruiseappsv1alpha1.ResourceDistributionSourceAnnotation] == rdName {
			n++
		}
	}
	return n, nil
}

// addDistributionMetrics adds each change's time and the manager's writes per namespace against the issue's
// target.
func addDistributionMetrics(res *Result, changes []rdChange) {
	phases := make([]Phase, 0, len(changes))
	for _, c := range changes {
		phases = append(phases, c.Phase)
	}
	res.Record(sumPhases(phases))
	notes := map[string]string{
		"create": "ResourceDistribution created -> its status showing desired = succeeded",
		"edit":   "merge patch of the Secret's data in spec.resource sent -> the status showing desired = succeeded at the new generation",
	}
	for _, c := range changes {
		res.Add(
			Metric{Name: fmt.Sprintf("%s: %d namespaces distributed", c.Name, rdNamespaces), Unit: UnitSeconds, Value: c.Took.Seconds(),
				Note: notes[c.Name] + fmt.Sprintf(" (%d)", rdNamespaces)},
			Metric{Name: fmt.Sprintf("manager writes per namespace (%s)", c.Name), Unit: UnitPerNamespace,
				Value: writesPerNamespace(c.Phase.Requests, rdNamespaces), Note: perPodWrites(c.Phase.Requests, rdNamespaces)}.
				WithTarget(rdWritesTarget),
		)
		res.Add(counterMetrics(rdCounters, c.Counters, " ("+c.Name+")", "")...)
	}
}

// writesPerNamespace is the manager's writes divided by the namespaces.
func writesPerNamespace(requests []RequestCount, namespaces int) float64 {
	if namespaces <= 0 {
		return 0
	}
	return float64(writes(requests)) / float64(namespaces)
}
