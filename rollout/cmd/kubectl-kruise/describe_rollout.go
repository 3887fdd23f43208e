package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// rowFormat is the label column of `describe rollout`, as upstream prints it.
const rowFormat = "%-19s%v\n"

// rolloutView is what `describe rollout` shows: the Rollout, its workload and the pods of the batch.
type rolloutView struct {
	Rollout *rolloutsv1beta1.Rollout
	// Workload is nil when it could not be read; WorkloadErr says why.
	Workload    *unstructured.Unstructured
	WorkloadErr string
	Pods        []corev1.Pod
	Now         time.Time
	Color       bool
}

// renderDescribe draws the whole description.
func renderDescribe(v rolloutView) string {
	var b strings.Builder
	ro := v.Rollout
	fmt.Fprintf(&b, rowFormat, "Name:", ro.Name)
	fmt.Fprintf(&b, rowFormat, "Namespace:", ro.Namespace)
	fmt.Fprintf(&b, rowFormat, "Status:", v.icon(phaseName(ro.Status.Phase))+phaseName(ro.Status.Phase)+observedText(ro))
	if ro.Status.Message != "" {
		fmt.Fprintf(&b, rowFormat, "Message:", ro.Status.Message)
	}
	if ro.Spec.Strategy.Paused {
		fmt.Fprintf(&b, rowFormat, "Paused:", "true (spec.strategy.paused)")
	}
	writeStrategy(&b, v)
	writeReleaseStatus(&b, ro)
	writeTrafficRoutings(&b, ro)
	writeWorkload(&b, v)
	writeConditions(&b, ro.Status.Conditions)
	writePods(&b, v)
	return b.String()
}

func observedText(ro *rolloutsv1beta1.Rollout) string {
	if ro.Generation > 0 && ro.Status.ObservedGeneration < ro.Generation {
		return fmt.Sprintf(" (generation %d not observed yet)", ro.Generation)
	}
	return ""
}

func strategyText(ro *rolloutsv1beta1.Rollout) string {
	switch ro.Spec.Strategy.GetRollingStyle() {
	case rolloutsv1beta1.BlueGreenRollingStyle:
		return "BlueGreen"
	case rolloutsv1beta1.CanaryRollingStyle:
		return "Canary (extra canary workload)"
	case rolloutsv1beta1.PartitionRollingStyle:
		return "Canary (partition)"
	default:
		return "<none>"
	}
}

func writeStrategy(b *strings.Builder, v rolloutView) {
	ro := v.Rollout
	steps := ro.Spec.Strategy.GetSteps()
	fmt.Fprintf(b, rowFormat, "Strategy:", strategyText(ro))
	sub := ro.Status.GetSubStatus()
	current := int32(0)
	if sub != nil {
		current = sub.CurrentStepIndex
	}
	fmt.Fprintf(b, rowFormat, " Step:", fmt.Sprintf("%d/%d", current, len(steps)))
	if len(steps) == 0 {
		return
	}
	fmt.Fprint(b, " Steps:\n")
	for i, s := range steps {
		idx := int32(i + 1) //nolint:gosec // at most 50 steps (CRD max)
		writeStep(b, v, idx, s, sub)
	}
}

func writeStep(b *strings.Builder, v rolloutView, idx int32, s rolloutsv1beta1.CanaryStep, sub *rolloutsv1beta1.CommonStatus) {
	fmt.Fprintf(b, rowFormat, "  -  Replicas:", replicasText(s))
	if s.Traffic != nil {
		fmt.Fprintf(b, rowFormat, "     Traffic:", *s.Traffic)
	}
	for _, m := range matchTexts(s.Matches) {
		fmt.Fprintf(b, rowFormat, "     Match:", m)
	}
	fmt.Fprintf(b, rowFormat, "     Pause:", pauseText(v.Rollout, idx, s))
	if sub == nil {
		return
	}
	switch {
	case sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted || idx < sub.CurrentStepIndex:
		fmt.Fprintf(b, rowFormat, "     State:", "done")
	case idx == sub.CurrentStepIndex:
		state := stepStateText(snapshot{Rollout: v.Rollout, Now: v.Now}, sub)
		fmt.Fprintf(b, rowFormat, "     State:", v.highlight(state+" (current step)"))
	}
}

// matchTexts shows each match as its conditions joined by "and".
func matchTexts(matches []rolloutsv1beta1.HttpRouteMatch) []string {
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		var parts []string
		if m.Path != nil && m.Path.Value != nil {
			parts = append(parts, "path "+*m.Path.Value)
		}
		for _, h := range m.Headers {
			parts = append(parts, fmt.Sprintf("header %s=%s", h.Name, h.Value))
		}
		for _, q := range m.QueryParams {
			parts = append(parts, fmt.Sprintf("query %s=%s", q.Name, q.Value))
		}
		out = append(out, strings.Join(parts, " and "))
	}
	return out
}

func writeTrafficRoutings(b *strings.Builder, ro *rolloutsv1beta1.Rollout) {
	refs := ro.Spec.Strategy.GetTrafficRoutings()
	if ref := trafficRoutingRef(ro); ref != "" {
		fmt.Fprintf(b, rowFormat, "Traffic Routing:", "TrafficRouting "+ref)
	}
	if len(refs) == 0 {
		return
	}
	fmt.Fprint(b, "Traffic Routings:\n")
	for _, r := range refs {
		fmt.Fprintf(b, rowFormat, "  -  Service:", r.Service)
		if r.Ingress != nil {
			fmt.Fprintf(b, rowFormat, "     Ingress:", strings.TrimSpace(r.Ingress.Name+" (class "+r.Ingress.ClassType+")"))
		}
		if r.Gateway != nil && r.Gateway.HTTPRouteName != nil {
			fmt.Fprintf(b, rowFormat, "     HTTPRoute:", *r.Gateway.HTTPRouteName)
		}
		for _, c := range r.CustomNetworkRefs {
			fmt.Fprintf(b, rowFormat, "     Custom:", fmt.Sprintf("%s %s (%s)", c.Kind, c.Name, c.APIVersion))
		}
	}
}

func trafficRoutingRef(ro *rolloutsv1beta1.Rollout) string {
	switch s := ro.Spec.Strategy; {
	case s.Canary != nil:
		return s.Canary.TrafficRoutingRef
	case s.BlueGreen != nil:
		return s.BlueGreen.TrafficRoutingRef
	default:
		return ""
	}
}

func writeWorkload(b *strings.Builder, v rolloutView) {
	ref := v.Rollout.Spec.WorkloadRef
	fmt.Fprintf(b, rowFormat, "Workload:", fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, ref.APIVersion))
	if v.Workload == nil {
		fmt.Fprintf(b, rowFormat, "", "cannot read the workload: "+v.WorkloadErr)
		return
	}
	for i, image := range workloadImages(v.Workload) {
		label := ""
		if i == 0 {
			label = "Images:"
		}
		fmt.Fprintf(b, rowFormat, label, image)
	}
	fmt.Fprint(b, "Replicas:\n")
	for _, r := range replicaCounts(v.Workload) {
		fmt.Fprintf(b, rowFormat, " "+r.label+":", r.value)
	}
}

// writeReleaseStatus shows the canary or blue-green status of the release in progress (or last done).
func writeReleaseStatus(b *strings.Builder, ro *rolloutsv1beta1.Rollout) {
	st := ro.Status
	var title, update string
	var updated, ready int32
	switch {
	case st.CanaryStatus != nil:
		title, update = "Canary Status:", st.CanaryStatus.CanaryRevision
		updated, ready = st.CanaryStatus.CanaryReplicas, st.CanaryStatus.CanaryReadyReplicas
	case st.BlueGreenStatus != nil:
		title, update = "Blue-Green Status:", st.BlueGreenStatus.UpdatedRevision
		updated, ready = st.BlueGreenStatus.UpdatedReplicas, st.BlueGreenStatus.UpdatedReadyReplicas
	default:
		return
	}
	sub := st.GetSubStatus()
	fmt.Fprint(b, title+"\n")
	fmt.Fprintf(b, rowFormat, " Stable Revision:", orNone(sub.StableRevision))
	fmt.Fprintf(b, rowFormat, " Update Revision:", orNone(update))
	fmt.Fprintf(b, rowFormat, " Template Hash:", orNone(sub.PodTemplateHash))
	fmt.Fprintf(b, rowFormat, " Next Step:", sub.NextStepIndex)
	fmt.Fprintf(b, rowFormat, " Updated Pods:", fmt.Sprintf("%d (%d ready)", updated, ready))
	if sub.LastUpdateTime != nil {
		fmt.Fprintf(b, rowFormat, " Last Update:", sub.LastUpdateTime.UTC().Format(time.RFC3339))
	}
	if sub.Message != "" {
		fmt.Fprintf(b, rowFormat, " Message:", sub.Message)
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func workloadImages(w *unstructured.Unstructured) []string {
	t, err := podTemplate(w)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(t.Spec.Containers))
	for _, c := range t.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

type replicaCount struct {
	label string
	value int64
}

// replicaCounts reads the workload's pod counts; DaemonSets count scheduled nodes instead of replicas.
func replicaCounts(w *unstructured.Unstructured) []replicaCount {
	fields := [][2]string{{"Desired", "spec.replicas"}, {"Current", "status.replicas"}, {"Updated", "status.updatedReplicas"},
		{"Ready", "status.readyReplicas"}, {"Available", "status.availableReplicas"}}
	if w.GetKind() == "DaemonSet" {
		fields = [][2]string{{"Desired", "status.desiredNumberScheduled"}, {"Current", "status.currentNumberScheduled"},
			{"Updated", "status.updatedNumberScheduled"}, {"Ready", "status.numberReady"}, {"Available", "status.numberAvailable"}}
	}
	out := make([]replicaCount, 0, len(fields))
	for _, f := range fields {
		n, _, _ := unstructured.NestedInt64(w.Object, strings.Split(f[1], ".")...)
		out = append(out, replicaCount{f[0], n})
	}
	return out
}

func writeConditions(b *strings.Builder, conds []rolloutsv1beta1.RolloutCondition) {
	if len(conds) == 0 {
		return
	}
	fmt.Fprint(b, "Conditions:\n")
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range conds {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, orNone(c.Reason), c.Message)
	}
	_ = w.Flush() // a strings.Builder never fails a write
}

func writePods(b *strings.Builder, v rolloutView) {
	if len(v.Pods) == 0 {
		return
	}
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tREADY\tBATCH ID\tREVISION\tAGE\tRESTARTS\tSTATUS")
	for _, p := range v.Pods {
		status := podStatus(p)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s%s\n", p.Name, podReady(p), orNone(p.Labels[rolloutsv1beta1.RolloutBatchIDLabel]),
			podRevision(p), duration.HumanDuration(v.Now.Sub(p.CreationTimestamp.Time)), podRestarts(p), v.icon(status), status)
	}
	_ = w.Flush() // a strings.Builder never fails a write
}

func podStatus(p corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	return string(p.Status.Phase)
}

func podReady(p corev1.Pod) string {
	ready := 0
	for _, s := range p.Status.ContainerStatuses {
		if s.Ready {
			ready++
		}
	}
	return strconv.Itoa(ready) + "/" + strconv.Itoa(len(p.Spec.Containers))
}

func podRestarts(p corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

func podRevision(p corev1.Pod) string {
	if h := p.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]; h != "" {
		return h
	}
	return orNone(p.Labels[rolloutsv1beta1.ControllerRevisionHashLabelKey])
}

// icon marks a phase with a colored sign on a terminal, as upstream does; nothing elsewhere.
func (v rolloutView) icon(phase string) string {
	if !v.Color {
		return ""
	}
	switch phase {
	case string(rolloutsv1beta1.RolloutPhaseHealthy), string(corev1.PodRunning), string(corev1.PodSucceeded):
		return "\x1b[32m✔\x1b[0m "
	case string(rolloutsv1beta1.RolloutPhaseProgressing), string(rolloutsv1beta1.RolloutPhaseInitial), string(corev1.PodPending):
		return "\x1b[33m⚠\x1b[0m "
	case string(rolloutsv1beta1.RolloutPhaseDisabled), string(rolloutsv1beta1.RolloutPhaseDisabling),
		string(rolloutsv1beta1.RolloutPhaseTerminating), string(corev1.PodFailed), string(corev1.PodUnknown):
		return "\x1b[31m✘\x1b[0m "
	default:
		return ""
	}
}

func (v rolloutView) highlight(s string) string {
	if !v.Color {
		return s
	}
	return "\x1b[32m" + s + "\x1b[0m"
}
