// Package webhooks runs Flotilla's webhook server support: a CertManager
// that keeps a self-signed CA and serving certificate in a Secret, writes
// the serving pair where controller-runtime's webhook server reloads it,
// and injects clientConfig and caBundle into the webhook configurations and
// the CRDs converted by webhook; and the /convert handler for the
// rollouts.kruise.io kinds served in two versions. Register wires both
// into a manager.
package webhooks
