// Package webhooks tests webhook delivery end to end: runs on the real
// embedded Temporal deliver their events to a receiver (receiver.js)
// that verifies every signature with the Standard Webhooks library
// (standardwebhooks, pinned by package-lock.json, installed by make
// test-deps) and is restarted between deliveries.
package webhooks
