// Package plan is the pure half of the manager's ImagePullJob and ImageListPullJob controllers: which nodes an
// ImagePullJob selects and which of them start pulling now (parallelism), its status from its nodes'
// NodeImage statuses, when it completes, fails by its deadline or is deleted after its TTL; how a tag is
// written into and taken out of a NodeImage; the copies of pull secrets the node agent reads; and the
// ImagePullJobs an ImageListPullJob keeps. Values in, values out: no client, no clock.
package plan
