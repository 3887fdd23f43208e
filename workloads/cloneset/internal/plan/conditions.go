package plan

import kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"

// Condition returns the status condition of type t, or nil.
func Condition(s *kruiseappsv1alpha1.CloneSetStatus, t kruiseappsv1alpha1.CloneSetConditionType) *kruiseappsv1alpha1.CloneSetCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// SetCondition puts c in place of the condition of its type, or adds it.
func SetCondition(s *kruiseappsv1alpha1.CloneSetStatus, c kruiseappsv1alpha1.CloneSetCondition) {
	if prev := Condition(s, c.Type); prev != nil {
		*prev = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// RemoveCondition drops the condition of type t.
func RemoveCondition(s *kruiseappsv1alpha1.CloneSetStatus, t kruiseappsv1alpha1.CloneSetConditionType) {
	kept := s.Conditions[:0:0]
	for _, c := range s.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	s.Conditions = kept
}
