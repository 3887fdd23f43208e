package luavm

import (
	lua "github.com/yuin/gopher-lua"
)

// Bounds on what a pooled state keeps for recycling, so one large input does not stay with it.
const (
	maxKeptTables = 4096
	maxKeptKeys   = 16384
)

// recycler lets the tables made for one call's obj make the next call's obj when they would hold the same
// keys. A gopher-lua table with string keys costs three maps and a key list besides itself, and building obj
// was about half of what a call allocated; the provider calls a script again and again on objects of one
// shape. Reuse is sound because after a call that succeeded nothing the next call can reach holds an earlier
// obj's table (the environment, the library copies and the markers are replaced when a script changed them),
// and a reused table is refilled to exactly what a new one would hold: tables are reused only when their key
// list has its old length (gopher-lua appends every key ever added to the list, so a key added, even one
// removed again, shows) and objects have no array part, arrays are cut to their new length, every key and
// element is set again and the metatable reset. An idle state keeps its last obj's tables, within the bounds
// above.
//
// Tables are matched by position: obj is built in an order that depends only on its shape (object members in
// key order, children before their parent), so the n-th table built is the n-th of the previous call's obj when the shapes
// agree, and a new table where they do not.
type recycler struct {
	// on is set while obj is built; tables made at other times (json.decode) are new.
	on bool
	// full is set once a table of this obj was not recorded, so that next stays in build order.
	full bool
	// prev are the tables of the previous obj in the order they were built, next those of this one.
	prev, next []keptTable
	// prevKeys and nextKeys hold the keys of the objects in prev and next.
	prevKeys, nextKeys []string
	// pos is the index in prev of the table the next one built may reuse.
	pos int
}

// keptTable is a table of obj: an object with the n keys from index from of the keys list, or an array.
type keptTable struct {
	t       *lua.LTable
	array   bool
	from, n int
}

// begin readies the recycler for building obj, also when a first attempt was abandoned.
func (r *recycler) begin() {
	r.on, r.full, r.pos = true, false, 0
	clear(r.next)
	r.next, r.nextKeys = r.next[:0], r.nextKeys[:0]
}

// end makes this obj's tables the ones the next call may reuse.
func (r *recycler) end() {
	r.on = false
	clear(r.prev)
	clear(r.prevKeys)
	r.prev, r.next = r.next, r.prev[:0]
	r.prevKeys, r.nextKeys = r.nextKeys, r.prevKeys[:0]
}

// candidate returns the previous obj's table at this position and moves on; ok is false when recycling is
// off or the previous obj had fewer tables.
func (r *recycler) candidate() (keptTable, bool) {
	if !r.on || r.pos >= len(r.prev) {
		return keptTable{}, false
	}
	k := r.prev[r.pos]
	r.pos++
	return k, true
}

// object returns a table of the previous obj that held exactly members' keys and was left with the same key
// list and no array part, or nil.
func (r *recycler) object(members []member) *lua.LTable {
	k, ok := r.candidate()
	if !ok || k.array || k.n != len(members) {
		return nil
	}
	keys, array, ok := tableSizes(k.t)
	if !ok || keys != k.n || array != 0 {
		return nil
	}
	for i, m := range members {
		if r.prevKeys[k.from+i] != m.key {
			return nil
		}
	}
	return k.t
}

// array returns a table of the previous obj that was an array and never had other keys, its array part cut
// to at most n elements, or nil. Scripts often append to arrays of obj; keeping those reuses their growth too.
func (r *recycler) array(n int) *lua.LTable {
	k, ok := r.candidate()
	if !ok || !k.array {
		return nil
	}
	keys, array, ok := tableSizes(k.t)
	if !ok || keys != 0 {
		return nil
	}
	for ; array > n; array-- {
		k.t.Remove(array)
	}
	return k.t
}

// keepObject records t, made or refilled from members, for the next call.
func (r *recycler) keepObject(t *lua.LTable, members []member) {
	if !r.recording(len(members)) {
		return
	}
	r.next = append(r.next, keptTable{t: t, from: len(r.nextKeys), n: len(members)})
	for _, m := range members {
		r.nextKeys = append(r.nextKeys, m.key)
	}
}

// keepArray records the array t for the next call.
func (r *recycler) keepArray(t *lua.LTable) {
	if !r.recording(0) {
		return
	}
	r.next = append(r.next, keptTable{t: t, array: true})
}

// recording reports whether one more table with keys keys can be recorded, and stops recording for this obj
// once one cannot.
func (r *recycler) recording(keys int) bool {
	if !r.on || r.full {
		return false
	}
	if len(r.next) >= maxKeptTables || len(r.nextKeys)+keys > maxKeptKeys {
		r.full = true
		return false
	}
	return true
}
