package bench

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// auditPolicy records, with their request bodies, the writes the manager sends (it runs as
// cluster.ControllerUser), except to pods: a release's pod label patches would drown the rest. The last
// rule is the one for every other client's writes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["%[1]s"]
  resources: [{group: "", resources: ["pods"]}]
- level: Request
  users: ["%[1]s"]
  verbs: ["create", "update", "patch", "delete"]
- level: %[2]s
  verbs: ["create", "update", "patch", "delete"]
`

// othersLevel is the audit level of the other clients' writes: FLOTILLA_BENCH_AUDIT=all records them without
// their bodies (how often kube-controller-manager writes what, beside the manager), anything else leaves them out.
func othersLevel() string {
	if os.Getenv("FLOTILLA_BENCH_AUDIT") == "all" {
		return "Metadata"
	}
	return "None"
}

// withAudit adds an audit log of the manager's writes to opts when FLOTILLA_BENCH_AUDIT is set: the API
// server writes it to audit.log in the scenario's work directory, which is then kept. It shows each write's
// time, object and body, which the request counters do not.
func withAudit(opts cluster.Options, workDir string) (cluster.Options, error) {
	if os.Getenv("FLOTILLA_BENCH_AUDIT") == "" {
		return opts, nil
	}
	policy := filepath.Join(workDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, fmt.Appendf(nil, auditPolicy, cluster.ControllerUser, othersLevel()), 0o600); err != nil {
		return opts, fmt.Errorf("writing the audit policy: %w", err)
	}
	args := maps.Clone(opts.Args)
	if args == nil {
		args = map[string][]string{}
	}
	args["kube-apiserver"] = slices.Concat(args["kube-apiserver"],
		[]string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(workDir, "audit.log")})
	opts.Args = args
	return opts, nil
}
