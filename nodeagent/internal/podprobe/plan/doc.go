// Package plan is the pure part of the manager's PodProbeMarker and NodePodProbe controllers: values in,
// values out, no client and no clock.
//
// For a PodProbeMarker (Want, WithMarker): which of its namespace's pods get its probes (active, initialized,
// on a node: Eligible), the NodePodProbe entries they need on each node, named ports resolved to numbers from
// the pods' containers (ResolvePort), and how one NodePodProbe spec changes to hold exactly those probes of
// the marker: entries updated in place, the marker's probes it no longer has or that a pod no longer matched
// taken out, entries left without probes dropped. A marker's probes are told apart by the exact
// "<marker>#" prefix of their names.
//
// For a NodePodProbe (Kept, ForPod): which entries stay (their pod is there, the same, and active) and which
// probes (their marker exists), and, from the node agent's results in its status, the pod conditions, labels
// and annotations a pod gets.
package plan
