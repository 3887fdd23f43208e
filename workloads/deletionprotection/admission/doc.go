// Package admission holds the rules of upstream OpenKruise's deletion protection: which deletions of an object
// labelled policy.kruise.io/delete-protection are refused, and what the refusal says (the label, its value and
// what still exists). Upstream never checks the label's value; Flotilla also refuses setting a value that would
// protect nothing (ValidateLabel). It is pure: the module's webhook handlers decode the requests, count what a
// Cascading rule needs counted, and call in here.
package admission
