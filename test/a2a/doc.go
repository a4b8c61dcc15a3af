// Package a2a tests Longhaul's A2A door (api/a2aapi) end to end: the
// official A2A JavaScript SDK's client (@a2a-js/sdk 1.3.0, pinned by
// package-lock.json, installed by make test-deps) runs client.mjs against
// the real stack (embedded Temporal, NATS, a worker and the scripted
// model): discovery, blocking and streamed sends over both bindings, a
// resubscribe after the API that served the stream stopped, an approval
// answered through the door, cancel, and a push notification verified
// with the Standard Webhooks library. TestA2A runs them against the
// in-process stack (testenv); TestA2ADev against a real `longhaul dev`,
// the binary run as one process in a temporary folder (proctest.StartDev),
// whose restart (SIGTERM, then again on the same folder) a waiting task
// survives, and runs the README's A2A client as written.
package a2a
