// Package a2a tests Longhaul's A2A door (api/a2aapi) end to end: the
// official A2A JavaScript SDK's client (@a2a-js/sdk 1.3.0, pinned by
// package-lock.json, installed by make test-deps) runs client.mjs against
// the real stack (embedded Temporal, NATS, a worker and the scripted
// model): discovery, blocking and streamed sends over both bindings, a
// resubscribe after the API that served the stream stopped, an approval
// answered through the door, cancel, and a push notification verified
// with the Standard Webhooks library.
package a2a
