// Package plan is the AdvancedCronJob controller's pure planning: the cron schedule in its time zone, the
// most recent run that is due (as kube's CronJob controller finds it: one run however many were missed, none
// older than startingDeadlineSeconds), what the concurrency policy makes of it, which finished children the
// history limits remove, and the children themselves. Values in, values out: the controller reads the
// cluster, calls these functions and writes what they return.
package plan
