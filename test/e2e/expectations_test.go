package e2e

// Upstream's API surface that existing manifests, kubectl and kubectl-kruise
// rely on: OpenKruise v1.8 (every apps kind v1alpha1 only, Advanced
// StatefulSet also v1beta1 as storage; PodUnavailableBudget v1alpha1), the
// v1beta1 versions 1.9 added for the Advanced DaemonSet, BroadcastJob,
// AdvancedCronJob, ImagePullJob, ImageListPullJob and SidecarSet, and Kruise Rollouts v0.6 (Rollout and BatchRelease v1alpha1 + v1beta1 as
// storage). Sources: shared/reference/openkruise.md §2 and
// kruise-rollouts.md §2.1.

const (
	appsGroup     = "apps.kruise.io"
	policyGroup   = "policy.kruise.io"
	rolloutsGroup = "rollouts.kruise.io"
	namespaced    = "Namespaced"
	clusterScope  = "Cluster"
)

// crdWant is one CRD as upstream installs it.
type crdWant struct {
	plural     string
	group      string
	scope      string
	shortNames []string
	versions   []string // served, in any order
	storage    string
}

func (w crdWant) name() string {
	return w.plural + "." + w.group
}

var (
	v1alpha1Only = []string{"v1alpha1"}
	alphaAndBeta = []string{"v1alpha1", "v1beta1"}
)

var upstreamCRDs = []crdWant{
	{"advancedcronjobs", appsGroup, namespaced, []string{"acj"}, alphaAndBeta, "v1alpha1"},
	// Upstream 1.9 promoted these unchanged: v1beta1 is the v1alpha1 shape, served without a conversion webhook.
	{"broadcastjobs", appsGroup, namespaced, []string{"bcj"}, alphaAndBeta, "v1alpha1"},
	{"clonesets", appsGroup, namespaced, []string{"clone"}, v1alpha1Only, "v1alpha1"},
	{"containerrecreaterequests", appsGroup, namespaced, []string{"crr"}, v1alpha1Only, "v1alpha1"},
	// Served as upstream 1.9 serves them; stored as upstream 1.8 stores them, the version its plugin and the
	// engine read (1.9 stores v1beta1; which version is stored is invisible to clients).
	{"daemonsets", appsGroup, namespaced, []string{"daemon", "ads"}, []string{"v1alpha1", "v1beta1"}, "v1alpha1"},
	{"ephemeraljobs", appsGroup, namespaced, []string{"ejob"}, v1alpha1Only, "v1alpha1"},
	{"imagelistpulljobs", appsGroup, namespaced, nil, alphaAndBeta, "v1alpha1"},
	{"imagepulljobs", appsGroup, namespaced, nil, alphaAndBeta, "v1alpha1"},
	{"nodeimages", appsGroup, clusterScope, nil, v1alpha1Only, "v1alpha1"},
	{"nodepodprobes", appsGroup, clusterScope, nil, v1alpha1Only, "v1alpha1"},
	{"persistentpodstates", appsGroup, namespaced, nil, v1alpha1Only, "v1alpha1"},
	{"podprobemarkers", appsGroup, namespaced, nil, v1alpha1Only, "v1alpha1"},
	{"resourcedistributions", appsGroup, clusterScope, []string{"distributor"}, v1alpha1Only, "v1alpha1"},
	{"sidecarsets", appsGroup, clusterScope, nil, alphaAndBeta, "v1alpha1"},
	{"statefulsets", appsGroup, namespaced, []string{"sts", "asts"}, []string{"v1alpha1", "v1beta1"}, "v1beta1"},
	{"uniteddeployments", appsGroup, namespaced, []string{"ud"}, v1alpha1Only, "v1alpha1"},
	{"workloadspreads", appsGroup, namespaced, []string{"ws"}, v1alpha1Only, "v1alpha1"},
	{"podunavailablebudgets", policyGroup, namespaced, []string{"pub"}, v1alpha1Only, "v1alpha1"},
	{"rollouts", rolloutsGroup, namespaced, nil, []string{"v1alpha1", "v1beta1"}, "v1beta1"},
	{"batchreleases", rolloutsGroup, namespaced, nil, []string{"v1alpha1", "v1beta1"}, "v1beta1"},
	{"trafficroutings", rolloutsGroup, namespaced, nil, v1alpha1Only, "v1alpha1"},
	{"rollouthistories", rolloutsGroup, namespaced, nil, v1alpha1Only, "v1alpha1"},
}

// column is a printer column as kubectl shows it: upper-cased name, and
// priority 1 for the ones only `-o wide` prints.
type column struct {
	name     string
	priority int32
}

func cols(names ...string) []column {
	out := make([]column, len(names))
	for i, n := range names {
		out[i] = column{name: n}
	}
	return out
}

func wide(names ...string) []column {
	out := cols(names...)
	for i := range out {
		out[i].priority = 1
	}
	return out
}

func concat(parts ...[]column) []column {
	var out []column
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// columnsWant is the table of one resource version, after NAME.
type columnsWant struct {
	plural  string
	group   string
	version string
	columns []column
}

func (w columnsWant) resource() string {
	return w.plural + "." + w.version + "." + w.group
}

var (
	containersImages = wide("CONTAINERS", "IMAGES")
	cloneSetColumns  = concat(cols("DESIRED", "UPDATED", "UPDATED_READY", "UPDATED_AVAILABLE", "READY", "TOTAL", "AGE"),
		containersImages, wide("SELECTOR"))
	daemonSetColumns    = concat(cols("DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"), containersImages)
	statefulSetColumns  = concat(cols("DESIRED", "CURRENT", "UPDATED", "READY", "AGE"), containersImages)
	batchReleaseColumns = cols("KIND", "PHASE", "BATCH", "BATCH-STATE", "AGE")
	// A CRD without printer columns gets the apiserver's default Age column.
	defaultColumns = cols("AGE")
)

var upstreamColumns = []columnsWant{
	{"clonesets", appsGroup, "v1alpha1", cloneSetColumns},
	{"statefulsets", appsGroup, "v1alpha1", statefulSetColumns},
	{"statefulsets", appsGroup, "v1beta1", statefulSetColumns},
	{"daemonsets", appsGroup, "v1alpha1", daemonSetColumns},
	{"daemonsets", appsGroup, "v1beta1", daemonSetColumns},
	{"broadcastjobs", appsGroup, "v1alpha1", cols("DESIRED", "ACTIVE", "SUCCEEDED", "FAILED", "AGE")},
	{"broadcastjobs", appsGroup, "v1beta1", cols("DESIRED", "ACTIVE", "SUCCEEDED", "FAILED", "AGE")},
	{"advancedcronjobs", appsGroup, "v1alpha1", cols("SCHEDULE", "TYPE", "LASTSCHEDULETIME", "AGE")},
	{"advancedcronjobs", appsGroup, "v1beta1", cols("SCHEDULE", "TYPE", "LASTSCHEDULETIME", "AGE")},
	{"sidecarsets", appsGroup, "v1alpha1", cols("MATCHED", "UPDATED", "READY", "AGE")},
	{"sidecarsets", appsGroup, "v1beta1", cols("MATCHED", "UPDATED", "READY", "AGE")},
	{"containerrecreaterequests", appsGroup, "v1alpha1", cols("PHASE", "POD", "NODE", "AGE")},
	{"ephemeraljobs", appsGroup, "v1alpha1", cols("STATUS", "MATCH", "SUCCEED", "FAILED", "RUNNING", "WAITING", "AGE")},
	{"imagepulljobs", appsGroup, "v1alpha1", cols("TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE", "MESSAGE")},
	{"imagepulljobs", appsGroup, "v1beta1", cols("TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE")},
	{"imagelistpulljobs", appsGroup, "v1alpha1", cols("TOTAL", "SUCCEEDED", "COMPLETED", "AGE")},
	{"imagelistpulljobs", appsGroup, "v1beta1", cols("TOTAL", "SUCCEEDED", "COMPLETED", "AGE")},
	{"nodeimages", appsGroup, "v1alpha1", cols("DESIRED", "PULLING", "SUCCEED", "FAILED", "AGE")},
	{"resourcedistributions", appsGroup, "v1alpha1", cols("TOTAL", "SUCCEED", "FAILED")},
	{"uniteddeployments", appsGroup, "v1alpha1", cols("DESIRED", "CURRENT", "UPDATED", "READY", "AGE")},
	{"workloadspreads", appsGroup, "v1alpha1", cols("WORKLOADNAME", "WORKLOADKIND", "ADAPTIVE", "AGE")},
	{"persistentpodstates", appsGroup, "v1alpha1", defaultColumns},
	{"podprobemarkers", appsGroup, "v1alpha1", defaultColumns},
	{"nodepodprobes", appsGroup, "v1alpha1", defaultColumns},
	{"podunavailablebudgets", policyGroup, "v1alpha1", cols("ALLOWED", "CURRENT", "DESIRED", "TOTAL")},
	{"rollouts", rolloutsGroup, "v1alpha1", cols("STATUS", "CANARY_STEP", "CANARY_STATE", "MESSAGE", "AGE")},
	{"rollouts", rolloutsGroup, "v1beta1", cols("STATUS", "CANARY_STEP", "CANARY_STATE", "MESSAGE", "AGE")},
	{"batchreleases", rolloutsGroup, "v1alpha1", batchReleaseColumns},
	{"batchreleases", rolloutsGroup, "v1beta1", batchReleaseColumns},
	{"trafficroutings", rolloutsGroup, "v1alpha1", cols("STATUS", "MESSAGE", "AGE")},
	{"rollouthistories", rolloutsGroup, "v1alpha1", defaultColumns},
}

// printedBySeed names, per resource, the seed example the kubectl check
// creates to have a row to print.
var printedBySeed = map[string]string{
	"clonesets.v1alpha1.apps.kruise.io":        "001-cloneset-nginx.yaml",
	"statefulsets.v1alpha1.apps.kruise.io":     "012-statefulset-nginx.yaml",
	"statefulsets.v1beta1.apps.kruise.io":      "012-statefulset-nginx.yaml",
	"daemonsets.v1alpha1.apps.kruise.io":       "020-daemonset-nginx.yaml",
	"broadcastjobs.v1alpha1.apps.kruise.io":    "023-broadcastjob-bcj.yaml",
	"advancedcronjobs.v1alpha1.apps.kruise.io": "026-advancedcronjob-acj.yaml",
	"sidecarsets.v1alpha1.apps.kruise.io":      "028-sidecarset-scs.yaml",
	"rollouts.v1alpha1.rollouts.kruise.io":     "042-rollout-rollout.yaml",
	"rollouts.v1beta1.rollouts.kruise.io":      "042-rollout-rollout.yaml",
}
