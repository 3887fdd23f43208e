package chart

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/flotilla-dev/flotilla/nodeagent"
	"github.com/flotilla-dev/flotilla/rollout/analysis"
	"github.com/flotilla-dev/flotilla/sidecarset"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob"
	"github.com/flotilla-dev/flotilla/workloads/cloneset"
	"github.com/flotilla-dev/flotilla/workloads/daemonset"
	"github.com/flotilla-dev/flotilla/workloads/deletionprotection"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution"
	"github.com/flotilla-dev/flotilla/workloads/statefulset"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread"
)

// cloneSetPaths are the webhook paths the cloneset module serves (workloads/cloneset.SetupWithManager),
// statefulSetPaths those of the statefulset module (workloads/statefulset.SetupWithManager), daemonSetPaths
// those of the daemonset module, ephemeralJobPaths those of the ephemeraljob module, cronJobPaths those of the
// advancedcronjob module, broadcastJobPaths those of the broadcastjob module, nodeAgentPaths those of the nodeagent
// module (nodeagent.SetupWithManager), distributionPaths those of the resourcedistribution module, unitedPaths
// those of the uniteddeployment module, protectionPaths
// those of the deletionprotection module, podStatePaths those of the persistentpodstate module (which also
// serves the pod chain's path),
// sidecarSetPaths those of the sidecarset module, which also serves the pod
// chain's path through sidecarSetPodWebhook, analysisPaths those of the analysis module, budgetPaths those of the
// podunavailablebudget module (the pod validating chain's path among them), spreadPaths those of the
// workloadspread module (which also serves both pod chains' paths); the rollout module serves every other path
// of the webhook file.
var (
	cloneSetPaths     = []string{cloneset.DefaultCloneSetPath, cloneset.ValidateCloneSetPath, webhooks.MutatePodPath}
	statefulSetPaths  = []string{statefulset.MutateStatefulSetPath, statefulset.ValidateStatefulSetPath}
	daemonSetPaths    = []string{daemonset.DefaultDaemonSetPath, daemonset.ValidateDaemonSetPath}
	ephemeralJobPaths = []string{ephemeraljob.ValidateEphemeralJobPath}
	cronJobPaths      = []string{advancedcronjob.MutateAdvancedCronJobPath, advancedcronjob.ValidateAdvancedCronJobPath}
	broadcastJobPaths = []string{broadcastjob.MutateBroadcastJobPath, broadcastjob.ValidateBroadcastJobPath}
	nodeAgentPaths    = []string{nodeagent.MutateContainerRecreateRequestPath, nodeagent.MutateImagePullJobPath,
		nodeagent.ValidateImagePullJobPath, nodeagent.MutateImageListPullJobPath, nodeagent.ValidateImageListPullJobPath,
		nodeagent.ValidatePodProbeMarkerPath}
	sidecarSetPaths   = []string{sidecarset.MutateSidecarSetPath, sidecarset.ValidateSidecarSetPath}
	distributionPaths = []string{resourcedistribution.ValidateResourceDistributionPath}
	unitedPaths       = []string{uniteddeployment.MutateUnitedDeploymentPath, uniteddeployment.ValidateUnitedDeploymentPath}
	analysisPaths     = []string{analysis.ValidateAnalysisTemplatePath, analysis.ValidateClusterAnalysisTemplatePath, analysis.ValidateAnalysisRunPath}
	podStatePaths     = []string{persistentpodstate.ValidatePersistentPodStatePath}
	protectionPaths   = append(slices.Clone(deletionprotection.DeletionPaths), deletionprotection.ValidateLabelPath)
	budgetPaths       = []string{podunavailablebudget.ValidatePodUnavailableBudgetPath, webhooks.ValidatePodPath}
	spreadPaths       = []string{workloadspread.ValidateWorkloadSpreadPath}
)

// sidecarSetPodWebhook is the sidecarset module's pod webhook; it shares its path with the cloneset module's.
const sidecarSetPodWebhook = "msidecarset-pod.kb.io"

func allPaths(_, _ string) bool { return true }
func engineOnlyPaths(name, p string) bool {
	return !slices.Contains(cloneSetPaths, p) && !slices.Contains(statefulSetPaths, p) && !slices.Contains(daemonSetPaths, p) &&
		!slices.Contains(nodeAgentPaths, p) && !slices.Contains(ephemeralJobPaths, p) && !slices.Contains(cronJobPaths, p) &&
		!slices.Contains(broadcastJobPaths, p) && !slices.Contains(sidecarSetPaths, p) && !slices.Contains(distributionPaths, p) &&
		!slices.Contains(unitedPaths, p) && !slices.Contains(protectionPaths, p) && !slices.Contains(podStatePaths, p) &&
		!slices.Contains(budgetPaths, p) && !slices.Contains(spreadPaths, p) && name != sidecarSetPodWebhook
}

// rolloutPaths are the rollout module's alone: engineOnly's without the analysis module's.
func rolloutPaths(name, p string) bool {
	return engineOnlyPaths(name, p) && !slices.Contains(analysisPaths, p)
}
func cloneSetOnlyPaths(name, p string) bool {
	return slices.Contains(cloneSetPaths, p) && name != sidecarSetPodWebhook
}
func sidecarSetOnlyPaths(_, p string) bool {
	return slices.Contains(sidecarSetPaths, p) || p == webhooks.MutatePodPath
}

// chartCase is one documented switch: how to render it and what it must produce beyond the invariants every
// rendering keeps (see checkInvariants).
type chartCase struct {
	name string
	rel  release
	// webhooks selects by name and path the webhooks of the file the rendering installs.
	webhooks func(name, path string) bool
	// extraRules are the ClusterRole rules beyond the generated ones.
	extraRules []rbacv1.PolicyRule
	// noAgent: the node agent's DaemonSet and RBAC are not rendered.
	noAgent bool
	check   func(t *testing.T, r rendered)
}

var extraRule = rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "patch"}}

// listEverything is the rule the chart adds for the custom resources of Cascading CustomResourceDefinitions.
var listEverything = rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}}

const crdCascadingGates = "featureGates.ResourcesDeletionProtection=true,featureGates.DeletionProtectionForCRDCascadingGate=true"

var cases = []chartCase{
	{name: "default", rel: defaultRelease(), webhooks: allPaths, check: checkDefaults},
	{name: "engineOnly", rel: defaultRelease("--set", "engineOnly=true"), webhooks: engineOnlyPaths, noAgent: true,
		check: wantArgs("--enable-modules=rollout,analysis")},
	{name: "modules", rel: defaultRelease("--set", "modules={cloneset}"), webhooks: cloneSetOnlyPaths, noAgent: true,
		check: wantArgs("--enable-modules=cloneset")},
	{name: "nodeAgentOff", rel: defaultRelease("--set", "nodeAgent.enabled=false"), webhooks: allPaths, noAgent: true},
	{name: "nodeAgentSettings", webhooks: allPaths, check: checkAgentSettings, rel: defaultRelease(
		"--set", "nodeAgent.criEndpoint=unix:///hostvarrun/k3s/containerd/containerd.sock,nodeAgent.port=10301",
		"--set", "nodeAgent.image.repository=registry.example.com/flotilla-nodeagent,nodeAgent.image.tag=dev,nodeAgent.logLevel=debug",
		"--set-json", `nodeAgent.tolerations=[{"key":"gpu","operator":"Exists"}]`)},
	{name: "daemonsetModule", rel: defaultRelease("--set", "modules={rollout,daemonset}"), noAgent: true,
		webhooks: func(n, p string) bool { return rolloutPaths(n, p) || slices.Contains(daemonSetPaths, p) },
		check:    wantArgs("--enable-modules=rollout,daemonset")},
	{name: "advancedcronjobModule", rel: defaultRelease("--set", "modules={rollout,advancedcronjob}"), noAgent: true,
		webhooks: func(n, p string) bool { return rolloutPaths(n, p) || slices.Contains(cronJobPaths, p) },
		check:    wantArgs("--enable-modules=rollout,advancedcronjob")},
	{name: "sidecarsetModule", rel: defaultRelease("--set", "modules={sidecarset}"), webhooks: sidecarSetOnlyPaths, noAgent: true,
		check: wantArgs("--enable-modules=sidecarset")},
	{name: "allModulesListed", rel: defaultRelease("--set", "modules={rollout,analysis,cloneset,statefulset,daemonset,ephemeraljob,advancedcronjob,broadcastjob,sidecarset,nodeagent,resourcedistribution,uniteddeployment,persistentpodstate,deletionprotection,podunavailablebudget,workloadspread}"),
		webhooks: allPaths, check: wantArgs("--enable-modules=rollout,analysis,cloneset,statefulset,daemonset,ephemeraljob,advancedcronjob,broadcastjob,sidecarset,nodeagent,resourcedistribution,uniteddeployment,persistentpodstate,deletionprotection,podunavailablebudget,workloadspread")},
	{name: "persistentpodstateModule", rel: defaultRelease("--set", "modules={persistentpodstate}"), noAgent: true,
		webhooks: func(n, p string) bool {
			return slices.Contains(podStatePaths, p) || (p == webhooks.MutatePodPath && n != sidecarSetPodWebhook)
		},
		check: wantArgs("--enable-modules=persistentpodstate")},
	{name: "workloadspreadModule", rel: defaultRelease("--set", "modules={workloadspread}"), noAgent: true,
		webhooks: func(n, p string) bool {
			return slices.Contains(spreadPaths, p) || p == webhooks.ValidatePodPath || (p == webhooks.MutatePodPath && n != sidecarSetPodWebhook)
		},
		check: wantArgs("--enable-modules=workloadspread")},
	{name: "deletionprotectionModule", rel: defaultRelease("--set", "modules={rollout,deletionprotection}"), noAgent: true,
		webhooks: func(n, p string) bool { return rolloutPaths(n, p) || slices.Contains(protectionPaths, p) },
		check:    wantArgs("--enable-modules=rollout,deletionprotection")},
	{name: "crdCascadingDeletionProtection", rel: defaultRelease("--set", crdCascadingGates), webhooks: allPaths,
		extraRules: []rbacv1.PolicyRule{listEverything},
		check:      wantArgs("--feature-gates=DeletionProtectionForCRDCascadingGate=true,ResourcesDeletionProtection=true")},
	{name: "crdCascadingGatesWithoutTheModule", rel: defaultRelease("--set", crdCascadingGates, "--set", "modules={rollout}"),
		webhooks: rolloutPaths, noAgent: true, check: wantArgs("--enable-modules=rollout")},
	{name: "featureGates", webhooks: allPaths, check: checkFeatureGates,
		rel: defaultRelease("--set", "featureGates.RolloutHistory=true,featureGates.AdvancedDeployment=false")},
	{name: "extraArgs", webhooks: allPaths, check: wantArgs("--webhook-cert-renew-before=720h", "--zap-devel=false"),
		rel: defaultRelease("--set", "extraArgs={--webhook-cert-renew-before=720h,--zap-devel=false}")},
	{name: "log", rel: defaultRelease("--set", "log.level=debug,log.encoder=console"), webhooks: allPaths,
		check: wantArgs("--zap-log-level=debug", "--zap-encoder=console")},
	{name: "metricsService", rel: defaultRelease("--set", "metrics.service.enabled=true"), webhooks: allPaths,
		check: checkMetricsService},
	{name: "metricsOff", rel: defaultRelease("--set", "metrics.enabled=false,metrics.service.enabled=true"),
		webhooks: allPaths, check: checkMetricsOff},
	{name: "singleReplica", rel: defaultRelease("--set", "replicas=1,leaderElection.enabled=false"),
		webhooks: allPaths, check: checkSingleReplica},
	{name: "configurationNamespace", rel: defaultRelease("--set", "configurationNamespace=kruise-rollout"), webhooks: allPaths,
		check: checkConfigurationNamespace},
	{name: "ports", webhooks: allPaths, check: wantArgs("--webhook-port=10443", "--health-probe-bind-address=:9440"),
		rel: defaultRelease("--set", "webhook.port=10443,healthProbe.port=9440,metrics.port=9090")},
	{name: "otherRelease", rel: release{name: "prod", namespace: "prod-rollouts"}, webhooks: allPaths,
		check: wantNames("prod-flotilla")},
	{name: "fullnameOverride", rel: defaultRelease("--set", "fullnameOverride=fleet"), webhooks: allPaths,
		check: wantNames("fleet")},
	{name: "extraClusterRoleRules", webhooks: allPaths, extraRules: []rbacv1.PolicyRule{extraRule},
		rel: defaultRelease("--set-json", `extraClusterRoleRules=[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","patch"]}]`)},
	{name: "scheduling", webhooks: allPaths, check: checkScheduling, rel: defaultRelease(
		"--set", "nodeSelector.pool=system,image.repository=registry.example.com/flotilla-manager,image.tag=dev",
		"--set-json", `tolerations=[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]`,
		"--set-json", `imagePullSecrets=[{"name":"regcred"}]`,
		"--set", "podAnnotations.team=platform,serviceAccount.annotations.owner=platform")},
}
