package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// leaseName is the manager's leader-election Lease.
const leaseName = "flotilla-manager.kruise.io"

// These specs replace the suite's manager with their own (faults, other flags) and start a fresh one for the
// specs after them.
var _ = Describe("Manager faults and flags", Serial, Ordered, func() {
	var binary string

	BeforeAll(func() {
		binary = manager.Binary
		manager.Stop()
	})

	AfterAll(func(ctx SpecContext) {
		workDir, err := os.MkdirTemp("", "flotilla-e2e-")
		failOnError(err, "creating the work directory")
		laterWorkDirs = append(laterWorkDirs, workDir)
		m, err := startManager(ctx, workDir, binary)
		failOnError(err, "restarting the suite's manager")
		manager = m
	})

	// The mutating webhooks select only workloads a Rollout labelled, so with the manager down (its webhook
	// endpoint refusing connections, failurePolicy Fail) everything else still updates.
	It("does not block unrelated workloads while the manager is down", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.setVersion(ctx, "v2")
		s.waitPods(ctx, map[string]int{"v2": 2})

		By("a workload a Rollout labelled is refused, which shows the webhook is still configured")
		patch := []byte(`{"metadata":{"labels":{"rollouts.kruise.io/workload-type":"deployment"}}}`)
		_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring("failed calling webhook")))
	})

	// A module left out of --enable-modules leaves its kinds to nothing: each object of them gets a Warning event,
	// and objects of the kinds the running modules reconcile get none.
	It("gives each object of a kind no running module reconciles a Warning event", func(ctx SpecContext) {
		m := startWithoutModule(ctx, binary, "uniteddeployment", "muniteddeployment.kb.io", "vuniteddeployment.kb.io")
		defer m.Stop()
		ns := newNamespace(ctx, "unreconciled-")
		united := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
			"metadata": map[string]any{"name": "united", "namespace": ns},
			"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "united"}}},
		}}
		created, err := dyn.Resource(unitedDeployments).Namespace(ns).Create(ctx, united, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string { return warningsAbout(ctx, ns, created.GetUID(), "NoController") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(poll).Should(ConsistOf(
			"no controller for apps.kruise.io/UnitedDeployment in this installation: the object is accepted and nothing acts on it"))

		Expect(createCloneSet(ctx, ns, 1)).To(Succeed())
		cs, err := dyn.Resource(cloneSets).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() []string { return warningsAbout(ctx, ns, cs.GetUID(), "NoController") }).WithContext(ctx).
			WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEmpty())
	})

	// The native DaemonSet webhook selects every DaemonSet, as upstream's does, but only for a template change:
	// with the manager down that is refused, while other changes go through.
	It("refuses only a native DaemonSet's template change while the manager is down", func(ctx SpecContext) {
		s := newStory(ctx, "DaemonSet", 0)
		s.waitPods(ctx, map[string]int{"v1": 3})
		labels := []byte(`{"metadata":{"labels":{"team":"web"}}}`)
		_, err := kube.AppsV1().DaemonSets(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, labels, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		version := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"VERSION","value":"v2"}]}]}}}}`)
		_, err = kube.AppsV1().DaemonSets(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, version, metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring("failed calling webhook")))
	})

	// Upstream's --filter-workload-type=false lets a Rollout name any StatefulSet-like kind; the engine watches
	// it on first sight and moves its partition.
	It("releases a StatefulSet-like custom kind with --filter-workload-type=false", func(ctx SpecContext) {
		m := mustStart(ctx, binary, "--filter-workload-type=false")
		defer m.Stop()
		ensureGameSetCRD(ctx)
		s := &story{ns: newNamespace(ctx, "gameset-"), kind: "GameSet"}
		_, err := dyn.Resource(gameSets).Namespace(s.ns).Create(ctx, newGameSet(s.ns, 4), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		simulateGameSet(ctx, s.ns)
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(s.gameSetPartition(ctx)).To(Equal(int64(3)), "one of four pods updated")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		Eventually(func() int64 { return s.gameSetPartition(ctx) }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(BeZero(), "the partition is lifted at the end")
	})

	// A user moving from upstream keeps the Lua customisations in kruise-rollout/kruise-rollout-configuration.
	It("reads the configuration ConfigMap from --configuration-namespace", func(ctx SpecContext) {
		m := mustStart(ctx, binary, "--configuration-namespace=kruise-rollout")
		defer m.Stop()
		s := newStory(ctx, "Deployment", 2)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 2})
		ensureNamespace(ctx, "kruise-rollout")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-rollout-configuration", Namespace: "kruise-rollout"},
			Data: map[string]string{"lua.traffic.routing.ingress.upstream": "return {[\"upstream.example/weight\"] = obj.weight}"}}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app, classType: upstream}}`)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		ing, err := trafficWorld{ns: s.ns}.ingress(ctx, "app-canary")
		Expect(err).NotTo(HaveOccurred())
		Expect(ing.Annotations).To(Equal(map[string]string{"upstream.example/weight": "20"}))
	})

	// A release with pause.duration 0 runs by itself; the manager is SIGKILLed at random moments and
	// restarted each time. The release must end as an undisturbed one does.
	It("finishes a release exactly as an undisturbed one after repeated SIGKILLs", func(ctx SpecContext) {
		m := mustStart(ctx, binary)
		defer func() { m.Stop() }()
		s := newStory(ctx, "Deployment", 6)
		s.waitPods(ctx, map[string]int{"v1": 6})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n    pause: {duration: 0}\n  - replicas: 50%\n    pause: {duration: 0}\n  - replicas: 100%")
		avail := watchAvailability(ctx, s.ns, appName)
		s.setVersion(ctx, "v2")

		seed := time.Now().UnixNano()
		rng := rand.New(rand.NewPCG(uint64(seed), 0)) //nolint:gosec // test randomness, seed is logged
		GinkgoWriter.Printf("kill delays seeded with %d\n", seed)
		for i := range 4 {
			delay := time.Duration(rng.IntN(1500)) * time.Millisecond
			time.Sleep(delay)
			By(fmt.Sprintf("kill %d after %v, at %s", i+1, delay, s.step(ctx)))
			m.Kill()
			m = mustStart(ctx, binary)
		}
		// Healthy is also the phase before the release starts, which the kills may have held off past the loop:
		// wait for the Succeeded condition, which only the end of a release writes.
		Eventually(func() string { return s.succeeded(ctx) }).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(Equal("True/Success"))
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 6})
		s.expectReleased(ctx)
		Expect(avail.Lowest()).To(BeNumerically(">=", 5), "maxUnavailable 25%% of 6 rounds down to 1")
		expectNoBatchRelease(ctx, s.ns)
	})

	// Two replicas elect a leader; killing the leader mid-release hands the release to the other. The Lease is
	// shortened through the manager's flags (defaults 15s/10s/2s, with which the takeover took 16.5 to 17.7 s),
	// but its renew deadline stays long: a leader that cannot renew in time exits, and on a loaded 2-core
	// machine the API server's writes can stall for seconds.
	It("hands a release to the standby replica when the leader is killed", func(ctx SpecContext) {
		election := []string{"--leader-elect=true", "--leader-election-namespace=" + framework.DefaultWebhookNamespace,
			"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=8s", "--leader-election-retry-period=1s"}
		leader := mustStart(ctx, binary, election...)
		defer func() { leader.Stop() }()
		showOnFailure("leader", leader)
		waitLeader(ctx)
		standby := mustStart(ctx, binary, election...)
		defer standby.Stop()
		showOnFailure("standby", standby)

		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")

		holder := waitLeader(ctx)
		leader.Kill()
		killed := time.Now()
		s.approve(ctx)
		Eventually(func() string { return waitLeader(ctx) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			ShouldNot(Equal(holder))
		takeover := time.Since(killed)
		s.waitPhase(ctx, "Healthy")
		released := time.Since(killed)
		AddReportEntry("leader takeover", takeover.Round(100*time.Millisecond).String())
		GinkgoWriter.Printf("leader takeover %v; release finished %v after the kill\n", takeover, released)
		reportTakeover(takeover, released)
		s.waitPods(ctx, map[string]int{"v2": 4})
		s.expectReleased(ctx)

		By("a leader stopped gracefully gives the Lease up")
		standby.Stop()
		lease, err := kube.CoordinationV1().Leases(framework.DefaultWebhookNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(leaseHolder(lease)).To(BeEmpty())
	})
})

// everyModule is the manager's module table by name (rollout/cmd/manager/main.go).
var everyModule = []string{"rollout", "analysis", "cloneset", "workloadspread", "statefulset", "daemonset", "ephemeraljob",
	"broadcastjob", "nodeagent", "advancedcronjob", "resourcedistribution", "uniteddeployment", "deletionprotection",
	"podunavailablebudget", "sidecarset", "persistentpodstate"}

// startWithoutModule starts a manager running every module but one, with that module's webhooks left out of the
// configurations, as the chart's modules value installs it.
func startWithoutModule(ctx context.Context, binary, module string, webhooks ...string) *framework.Manager {
	GinkgoHelper()
	kubeconfig, err := testCluster.ControllerKubeconfig(ctx)
	failOnError(err, "writing the manager's kubeconfig")
	others := slices.DeleteFunc(slices.Clone(everyModule), func(m string) bool { return m == module })
	m, err := framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig: testCluster.Config(), KubeconfigPath: kubeconfig, WorkDir: GinkgoT().TempDir(), Binary: binary,
		ExtraArgs: append(suiteManagerArgs(), "--enable-modules="+strings.Join(others, ",")), WithoutWebhooks: webhooks,
	})
	failOnError(err, "starting a flotilla-manager without "+module)
	return m
}

// warningsAbout are the notes of the Warning events of a reason about one object.
func warningsAbout(ctx context.Context, ns string, uid types.UID, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason && e.Type == "Warning" {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func mustStart(ctx context.Context, binary string, args ...string) *framework.Manager {
	GinkgoHelper()
	m, err := startManager(ctx, GinkgoT().TempDir(), binary, args...)
	failOnError(err, "starting flotilla-manager")
	return m
}

// showOnFailure prints the end of m's log when the spec fails (an exit on its own ends there with the reason):
// the suite's own failure output shows only the suite's manager.
func showOnFailure(name string, m *framework.Manager) {
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("%s manager, last lines of %s:\n%s\n", name, m.LogPath, m.LogTail(80))
		}
	})
}

// waitLeader returns the Lease holder once there is one.
func waitLeader(ctx context.Context) string {
	GinkgoHelper()
	var holder string
	Eventually(func() string {
		lease, err := kube.CoordinationV1().Leases(framework.DefaultWebhookNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		holder = leaseHolder(lease)
		return holder
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).ShouldNot(BeEmpty())
	return holder
}

func leaseHolder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func expectNoBatchRelease(ctx context.Context, ns string) {
	GinkgoHelper()
	Eventually(func() error {
		_, err := dyn.Resource(batchReleases).Namespace(ns).Get(ctx, appName, metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("not found")))
}

// reportTakeover appends the measured takeover to $FLOTILLA_FAULTS_REPORT when set, for the record.
func reportTakeover(takeover, released time.Duration) {
	path := os.Getenv("FLOTILLA_FAULTS_REPORT")
	if path == "" {
		return
	}
	line := strings.Join([]string{time.Now().UTC().Format(time.RFC3339), takeover.String(), released.String()}, "\t") + "\n"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line)
}
