package plan

import "github.com/flotilla-dev/flotilla/workloads/ordinals"

// The set's ordinals are workloads/ordinals', shared with the persistentpodstate module.
type Reserved = ordinals.Reserved

var (
	ParseReserved = ordinals.ParseReserved
	ParseRange    = ordinals.ParseRange
	Slots         = ordinals.Slots
	Ordinal       = ordinals.Ordinal
	PodName       = ordinals.PodName
)
