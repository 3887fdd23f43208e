// Package admission holds upstream's EphemeralJob admission rules: what the validating webhook refuses, each
// rejection naming the field and the rule. Upstream has no defaulting webhook for EphemeralJob: the
// controller applies the defaults (parallelism 1, ttlSecondsAfterFinished 1800) without writing them to the
// spec, and this package leaves the spec as the user wrote it too.
package admission
