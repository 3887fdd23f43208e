package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// injectNamespace is where the pod webhook is called: no label keeps it from msidecarset-pod.kb.io.
	injectNamespace = "bench-sidecarset-inject"
	// injectBaselineNamespace carries the control-plane label, which the pod webhooks' namespaceSelector
	// skips: its pods go through admission without a webhook call, the floor a webhook adds to.
	injectBaselineNamespace = "bench-sidecarset-no-webhook"
	// injectPods is how many pods of each case a phase times; injectWarmUp more go first, untimed.
	injectPods   = 2000
	injectWarmUp = 30
	// injectAddedTarget bounds what the webhook adds to a pod creation's p99 (issue's target).
	injectAddedTarget = 10 * time.Millisecond
	// injectSelectLabel selects pods for the SidecarSets: "one" picks the first SidecarSet's pods,
	// "all" every SidecarSet's.
	injectSelectLabel = "bench.flotilla.dev/inject"
	// injectSetCount is the last phase's number of SidecarSets.
	injectSetCount = 10
)

var sidecarSetsResource = kruiseappsv1alpha1.GroupVersion.WithResource("sidecarsets")

// injectCase is one kind of pod creation a phase times.
type injectCase struct {
	Name      string
	Namespace string
	// Select is the pod's injectSelectLabel value, "" for none.
	Select string
	// Containers is how many containers the created pod must have: its own and the sidecars injected.
	Containers int
}

// injectPhase is one state of the cluster: its SidecarSets installed, its cases timed in turn.
type injectPhase struct {
	Sets  int
	Cases []injectCase
}

const caseNoWebhook = "no webhook"

var baselineCase = injectCase{Name: caseNoWebhook, Namespace: injectBaselineNamespace, Containers: 1}

// injectPhases: each times its webhook cases against pods of the baseline namespace created in turn with
// them, so that the comparison is taken in the same minute. With 0 SidecarSets the webhook lists none and
// returns; with 10, pods labelled "all" get 10 sidecars of distinct names (the worst case: every SidecarSet
// selects the pod) and pods labelled "one" get one of them (the common case: many SidecarSets, one selecting).
var injectPhases = []injectPhase{
	{Sets: 0, Cases: []injectCase{baselineCase, {Name: "webhook, 0 SidecarSets", Namespace: injectNamespace, Containers: 1}}},
	{Sets: 1, Cases: []injectCase{baselineCase,
		{Name: "1 SidecarSet selecting", Namespace: injectNamespace, Select: "one", Containers: 2}}},
	{Sets: injectSetCount, Cases: []injectCase{baselineCase,
		{Name: "10 SidecarSets, 1 selecting", Namespace: injectNamespace, Select: "one", Containers: 2},
		{Name: "10 SidecarSets, all selecting", Namespace: injectNamespace, Select: "all", Containers: 1 + injectSetCount}}},
}

// sidecarSetInject times pod creations through the pod webhook with 0, 1 and 10 SidecarSets installed,
// against pods of a namespace the webhook skips.
func sidecarSetInject() Scenario {
	return Scenario{
		Name: "sidecarset-inject",
		Description: fmt.Sprintf("the create call of a bare pod (client round trip, mutating admission included), %d per case, "+
			"with 0, 1 and 10 SidecarSets installed, against pods of a namespace the pod webhook skips created in turn "+
			"with them; no nodes, the pods stay Pending", injectPods),
		Cluster: cluster.Options{},
		Timeout: 10 * time.Minute,
		Run:     runSidecarSetInject,
	}
}

func runSidecarSetInject(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"sidecarsets": injectSetCount, "pods": injectPodCount()}
	dyn, err := startInjectScenario(ctx, env)
	if err != nil {
		return err
	}
	samples, calls := map[string]map[string][]time.Duration{}, map[string]webhookCalls{}
	phase, err := env.Measure(ctx, nil, func(ctx context.Context) error {
		for _, p := range injectPhases {
			s, c, err := runInjectPhase(ctx, env, dyn, p)
			if err != nil {
				return fmt.Errorf("%d SidecarSets: %w", p.Sets, err)
			}
			samples[phaseName(p.Sets)], calls[phaseName(p.Sets)] = s, c
		}
		return nil
	})
	if err != nil {
		return err
	}
	res.Record(phase)
	return addInjectMetrics(res, injectPhases, samples, calls)
}

func injectPodCount() int {
	n := 0
	for _, p := range injectPhases {
		n += len(p.Cases) * (injectPods + injectWarmUp)
	}
	return n
}

// startInjectScenario makes both namespaces, with the ServiceAccount the ServiceAccount admission plugin
// asks for (no kube-controller-manager runs to make it), and starts the manager.
func startInjectScenario(ctx context.Context, env *Env) (dynamic.Interface, error) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	for ns, labels := range map[string]map[string]string{injectNamespace: nil, injectBaselineNamespace: {"control-plane": "bench"}} {
		if err := namespaceWithAccount(ctx, env.Kube, ns, labels); err != nil {
			return nil, err
		}
	}
	return dyn, env.StartManager(ctx)
}

func namespaceWithAccount(ctx context.Context, kube kubernetes.Interface, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := kube.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", name, err)
	}
	return nil
}

// runInjectPhase installs the phase's SidecarSets, waits until the webhook injects them all, then creates
// pods of each case in turn, rotating which goes first, and returns their create times by case and what the
// API server timed of its calls to the webhook meanwhile.
func runInjectPhase(ctx context.Context, env *Env, dyn dynamic.Interface, p injectPhase) (map[string][]time.Duration, webhookCalls, error) {
	if err := installSidecarSets(ctx, dyn, p.Sets); err != nil {
		return nil, webhookCalls{}, err
	}
	if err := awaitInjection(ctx, env, p); err != nil {
		return nil, webhookCalls{}, err
	}
	before, err := env.APIServerSamples(ctx)
	if err != nil {
		return nil, webhookCalls{}, err
	}
	env.Logf("%d SidecarSets: creating %d pods of each of %d cases", p.Sets, injectPods, len(p.Cases))
	out, err := createInjectPods(ctx, env, p)
	if err != nil {
		return nil, webhookCalls{}, err
	}
	after, err := env.APIServerSamples(ctx)
	if err != nil {
		return nil, webhookCalls{}, err
	}
	calls, err := webhookCallsBetween(before, after)
	return out, calls, err
}

// createInjectPods creates the phase's pods and returns their create times by case, the warm-up left out.
func createInjectPods(ctx context.Context, env *Env, p injectPhase) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	for i := range injectWarmUp + injectPods {
		for k := range p.Cases {
			c := p.Cases[(i+k)%len(p.Cases)]
			took, err := timePodCreate(ctx, env.Kube, c, fmt.Sprintf("p%d-%s-%d", p.Sets, caseSlug(p, c), i))
			if err != nil {
				return nil, err
			}
			if i >= injectWarmUp {
				out[c.Name] = append(out[c.Name], took)
			}
		}
	}
	return out, nil
}

// caseSlug names a case's pods: its index in the phase.
func caseSlug(p injectPhase, c injectCase) string {
	for i := range p.Cases {
		if p.Cases[i].Name == c.Name {
			return fmt.Sprint(i)
		}
	}
	return "x"
}

// timePodCreate creates one pod of the case and times the call; a pod that comes back without the sidecars
// the case expects fails the run (the webhook fails open, so the time would measure its failure).
func timePodCreate(ctx context.Context, kube kubernetes.Interface, c injectCase, name string) (time.Duration, error) {
	pod := injectPod(c, name)
	begin := time.Now()
	got, err := kube.CoreV1().Pods(c.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	took := time.Since(begin)
	if err != nil {
		return 0, fmt.Errorf("creating pod %s/%s: %w", c.Namespace, name, err)
	}
	if n := len(got.Spec.Containers); n != c.Containers {
		return 0, fmt.Errorf("%s: pod %s/%s has %d containers, want %d", c.Name, c.Namespace, name, n, c.Containers)
	}
	return took, nil
}

func injectPod(c injectCase, name string) *corev1.Pod {
	labels := map[string]string{"app": "inject", BenchLabel: c.Namespace}
	if c.Select != "" {
		labels[injectSelectLabel] = c.Select
	}
	tmpl := benchPodTemplate(labels)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels}, Spec: tmpl.Spec}
}

// installSidecarSets creates SidecarSets up to n (those of earlier phases stay).
func installSidecarSets(ctx context.Context, dyn dynamic.Interface, n int) error {
	for i := range n {
		err := createObject(ctx, dyn, sidecarSetsResource, injectSidecarSet(i))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// injectSidecarSet is the i-th SidecarSet: the first selects pods labelled "one" or "all", the others "all"
// only; each injects one container of its own name.
func injectSidecarSet(i int) *kruiseappsv1alpha1.SidecarSet {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{injectSelectLabel: "all"}}
	if i == 0 {
		sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: injectSelectLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"one", "all"}}}}
	}
	return &kruiseappsv1alpha1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-sidecar-%d", i)},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector:   sel,
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("sidecar-%d", i), Image: benchImage}}},
		},
	}
}

// awaitInjection creates probe pods of each case until one comes back as the case expects: then the
// manager's cache holds every SidecarSet of the phase.
func awaitInjection(ctx context.Context, env *Env, p injectPhase) error {
	n := 0
	for _, c := range p.Cases {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n++
			_, last = timePodCreate(ctx, env.Kube, c, fmt.Sprintf("probe-%d-%d", p.Sets, n))
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the webhook to inject %d SidecarSets: %w", p.Sets, errors.Join(err, last))
		}
	}
	return nil
}
