package admission

import (
	"encoding/json"
	"testing"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as templates and runs and validates them on create and on update:
// nothing may panic, and an update that changes nothing is never refused.
func FuzzValidate(f *testing.F) {
	for _, obj := range []any{template(nil), run(nil)} {
		valid, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(valid))
	}
	f.Add(`{"spec":{"metrics":[{"name":"","successCondition":"result[","provider":{"web":{"url":"{{args.x}}","jsonPath":"{"}}}],` +
		`"args":[{"name":"a","valueFrom":{}}],"templates":[{"name":""},{"name":""}]}}`)
	f.Add(`{"spec":{"metrics":[{"name":"m","provider":{"prometheus":{"address":"http://p","query":"q","range":{"start":"1h","step":"0s"}}}}]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		tmpl, cluster, r := &analysisv1alpha1.AnalysisTemplate{}, &analysisv1alpha1.ClusterAnalysisTemplate{}, &analysisv1alpha1.AnalysisRun{}
		_ = json.Unmarshal([]byte(doc), tmpl)
		_ = json.Unmarshal([]byte(doc), cluster)
		_ = json.Unmarshal([]byte(doc), r)
		created := ValidateTemplate(tmpl, nil)
		if same := ValidateTemplate(tmpl, tmpl.DeepCopy()); len(same) > 0 {
			t.Fatalf("a template update changing nothing refused: %v (create: %v)", same, created)
		}
		_ = ValidateClusterTemplate(cluster, nil)
		_ = ValidateRun(r, nil)
		if same := ValidateRun(r, r.DeepCopy()); len(same) > 0 {
			t.Fatalf("a run update changing nothing refused: %v", same)
		}
	})
}
