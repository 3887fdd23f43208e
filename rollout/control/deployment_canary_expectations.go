package control

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/workloads/expectations"
)

// canaryCreations remembers each canary Deployment created for a release until a list shows it. With
// generateName a second create does not conflict, it makes a second canary; so while a creation is pending
// and the (cached) list does not show it, nothing is created. It is shared by every canary control of the
// process: controls are built per reconcile, the memory of a create must outlive them. A creation the cache
// never shows expires after a minute.
var canaryCreations = expectations.New(clock.RealClock{}, time.Minute)
