package pub

import "fmt"

// UpdateScatterStrategy lists label key/value pairs whose pods are spread evenly through the update
// order, so that pods sharing one pair are not all updated in the same batch.
//
// Example1: [{"key": "labelA", "value": "AAA"}]
// All pods with label labelA=AAA will be scattered when update.
//
// Example2: [{"key": "labelA", "value": "AAA"}, {"key": "labelB", "value": "BBB"}]
// The term matching more pods is scattered first, then the other.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key/value pair of an UpdateScatterStrategy.
type UpdateScatterTerm struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Validate rejects empty keys and duplicated terms, as upstream's admission webhooks do.
func (s UpdateScatterStrategy) Validate() error {
	seen := make(map[UpdateScatterTerm]struct{}, len(s))
	for i, term := range s {
		if term.Key == "" {
			return fmt.Errorf("scatterStrategy[%d]: key should not be empty", i)
		}
		if _, dup := seen[term]; dup {
			return fmt.Errorf("scatterStrategy[%d]: duplicated key=%s value=%s", i, term.Key, term.Value)
		}
		seen[term] = struct{}{}
	}
	return nil
}
