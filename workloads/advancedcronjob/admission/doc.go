// Package admission holds the AdvancedCronJob rules of upstream OpenKruise's apps.kruise.io/v1alpha1
// webhooks: the defaults its mutating webhook applies and the checks its validating webhook makes, each
// error naming its field. It is pure: the module's webhook handlers decode the requests and call in here.
//
// Three checks go further than upstream's, all for AdvancedCronJobs that upstream accepts and that can never
// create a child: the name may have at most 52 characters, so that a child's name (the AdvancedCronJob's,
// a dash and the run's Unix seconds) is a valid label value, as the Job and BroadcastJob controllers need;
// the template's pods must restart OnFailure or Never, as the Job API and upstream's BroadcastJob
// webhook require of every child; and, when the manager runs no ImageListPullJob controller (Options), an
// imageListPullJobTemplate is refused, as the ImageListPullJob webhook then refuses every ImageListPullJob.
package admission
