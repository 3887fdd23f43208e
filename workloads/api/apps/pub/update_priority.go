package pub

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdatePriorityStrategy is the strategy to define priority for pods update.
// Only one of orderPriority and weightPriority can be set.
type UpdatePriorityStrategy struct {
	// Order priority terms, pods will be sorted by the value of orderedKey.
	// For example:
	// ```
	// orderPriority:
	// - orderedKey: key1
	// - orderedKey: key2
	// ```
	// First, all pods which have key1 in labels will be sorted by the value of key1.
	// Then, the left pods which have no key1 but have key2 in labels will be sorted by
	// the value of key2 and put behind those pods have key1.
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`
	// Weight priority terms, pods will be sorted by the sum of all terms weight.
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm defines order priority.
type UpdatePriorityOrderTerm struct {
	// Calculate priority by value of this key.
	// Values of this key, will be sorted by GetInt(val). GetInt method will find the last int in value,
	// such as getting 5 in value '5', getting 10 in value 'sts-10'.
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm defines weight priority.
type UpdatePriorityWeightTerm struct {
	// Weight associated with matching the corresponding matchExpressions, in the range 1-100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
	// MatchSelector is used to select by pod's labels.
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// Validate reports the first invalid field; the rules are those upstream's admission webhooks apply
// (weight 0 is accepted there, so it is here).
func (s *UpdatePriorityStrategy) Validate() error {
	if s == nil {
		return nil
	}
	if len(s.WeightPriority) > 0 && len(s.OrderPriority) > 0 {
		return errors.New("only one of weightPriority and orderPriority can be used")
	}
	for i := range s.WeightPriority {
		if err := s.WeightPriority[i].validate(); err != nil {
			return fmt.Errorf("weightPriority[%d]: %w", i, err)
		}
	}
	for i, o := range s.OrderPriority {
		if o.OrderedKey == "" {
			return fmt.Errorf("orderPriority[%d]: orderedKey can not be empty", i)
		}
	}
	return nil
}

func (w *UpdatePriorityWeightTerm) validate() error {
	if w.Weight < 0 || w.Weight > 100 {
		return fmt.Errorf("weight %d must be in the range 1-100", w.Weight)
	}
	if w.MatchSelector.Size() == 0 {
		return errors.New("matchSelector can not be empty")
	}
	if _, err := metav1.LabelSelectorAsSelector(&w.MatchSelector); err != nil {
		return fmt.Errorf("invalid matchSelector: %w", err)
	}
	return nil
}
