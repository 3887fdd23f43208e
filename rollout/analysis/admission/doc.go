// Package admission holds the rules of the analysis.flotilla.dev validating webhook, each error naming its
// field: metrics with exactly one well-formed provider, a schedule a run can keep, CEL conditions that
// compile to a bool, arguments that are declared and have a value, and a run whose spec does not change once
// created (but for terminate). It is pure: the module's webhook handler decodes the requests and calls in here.
package admission
