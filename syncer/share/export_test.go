package share

// UIDPatch exposes uidPatch to the integration tests.
var UIDPatch = uidPatch
