package rollout

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleVersions is the expectation that the cache will show a Rollout's own last status write: it holds
// the resourceVersion each write replaced. Seeing that version again means the cache lags behind the write,
// and planning from it would repeat side effects (delete a BatchRelease just created, restart a release
// just started). Any other version clears the entry.
type staleVersions struct {
	mu       sync.Mutex
	replaced map[types.UID]string
}

func (s *staleVersions) record(uid types.UID, replacedVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaced == nil {
		s.replaced = map[types.UID]string{}
	}
	s.replaced[uid] = replacedVersion
}

// stale reports whether obj is the version a status write of this controller already replaced.
func (s *staleVersions) stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.replaced[obj.GetUID()]
	if ok && v == obj.GetResourceVersion() {
		return true
	}
	delete(s.replaced, obj.GetUID())
	return false
}
