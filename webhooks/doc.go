// Package webhooks is Flotilla's webhook server support, shared by every module and about none of them: a
// CertManager that keeps a self-signed CA and serving certificate in a Secret, writes the serving pair where
// controller-runtime's webhook server reloads it, and injects clientConfig and caBundle into the webhook
// configurations and the CRDs converted by webhook; the /convert handler serving the conversions the modules
// register (webhooks/convert makes a module's registration of a kind stored in one version and served in
// another); the pod webhook as a PodChain the modules add their mutations to, and the pod validating webhook
// as a PodValidationChain they add their validations to; and the helpers the modules' admission handlers
// share. Register wires the certificates and /convert into a manager, RegisterPodChain the pod webhook,
// RegisterPodValidationChain the pod validating webhook.
//
// Each module owns its admission handlers (its pure rules and a thin handler) and registers them from its
// setup, so arrows run one way: modules import webhooks, and webhooks imports no module (.golangci.yml).
package webhooks
