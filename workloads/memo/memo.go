// Package memo keeps values that are costly to compute and never change for their key, such as what a
// parsed annotation or an object's template at one generation says, within a bound.
package memo

import "sync"

// Bounded keeps computed values by key. When it holds its size it is emptied, which bounds it without the
// bookkeeping of an eviction order: the keys that matter come back at once. The values it hands out are
// shared; callers must not change them. The zero value is not usable: use New.
type Bounded[K comparable, V any] struct {
	mu     sync.Mutex
	size   int
	values map[K]V
}

// New is an empty memo that keeps at most size values.
func New[K comparable, V any](size int) *Bounded[K, V] {
	return &Bounded[K, V]{size: max(size, 1), values: map[K]V{}}
}

// Get is the value kept for k, computed by compute (outside the lock) and kept when there is none.
func (m *Bounded[K, V]) Get(k K, compute func() V) V {
	m.mu.Lock()
	v, ok := m.values[k]
	m.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.values) >= m.size {
		clear(m.values)
	}
	m.values[k] = v
	return v
}

// Len is how many values the memo keeps.
func (m *Bounded[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.values)
}
