// Package plan is the pure part of the UnitedDeployment controller: how many replicas and which partition
// each subset gets, the workload each subset runs, what to create, update and delete, and the status. No
// client and no clock: values in, values out.
package plan
