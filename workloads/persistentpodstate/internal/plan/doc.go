// Package plan is the pure part of the PersistentPodState module: the records a PersistentPodState keeps of
// its StatefulSet's pods (Status), the PersistentPodState a StatefulSet's annotations ask for (Generate), and
// the node affinity a pod created again under a recorded name gets (Inject). Values in, values out: the
// controller and the pod webhook read the cluster and apply what it says.
package plan
