// Package imagepullspec holds what more than one module needs to know of ImagePullJob and ImageListPullJob
// specs: how an image reference splits into the NodeImage image and tag the node agent pulls, and the
// validation of the specs, upstream's rules and those the controllers rely on. The node agent module's
// webhooks check ImagePullJobs and ImageListPullJobs with it, the AdvancedCronJob module's the
// imageListPullJobTemplate of an AdvancedCronJob; each error names its field under the path the caller gives.
// It is pure.
package imagepullspec
