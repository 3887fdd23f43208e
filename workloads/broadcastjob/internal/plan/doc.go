// Package plan is the BroadcastJob controller's pure planning, with upstream OpenKruise's semantics: which
// nodes want a pod (the template judged against each node as the scheduler would, pods pinned by node
// affinity on metadata.name), which of them get one next under parallelism, which pods count as active,
// succeeded or failed (restartLimit), and how the job moves between its phases: running, paused, completed
// and failed (failurePolicy, activeDeadlineSeconds), then deleted after ttlSecondsAfterFinished. Everything
// here is values in, values out: the controller reads the cluster, calls Decide and carries out what it says.
package plan
