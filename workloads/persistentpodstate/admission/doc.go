// Package admission holds the PersistentPodState rules of upstream OpenKruise's validating webhook, each error
// naming its field: a StatefulSet as the target, which never changes and no other PersistentPodState of the
// namespace names, and some topology to keep. It is pure: the module's webhook handler decodes the requests,
// lists the namespace's other PersistentPodStates, and calls in here.
package admission
