package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Versioning puts a worker in a Temporal worker deployment, so that a new
// build of the worker becomes a new version of the deployment and Temporal
// routes each run's tasks to the version meant for it, not to whichever
// worker polls first. The zero value is an unversioned worker.
type Versioning struct {
	// Deployment is the worker deployment's name; empty = unversioned.
	Deployment string
	// BuildID names this build within the deployment.
	BuildID string
	// Pinned keeps each run on the version that started it, which must
	// then keep running until its runs end. Without it runs auto-upgrade:
	// their next task goes to the deployment's current version, which
	// Longhaul's workflows allow because every change to them is versioned
	// with workflow.GetVersion and replayed against committed histories.
	Pinned bool
}

// Enabled reports whether the worker is versioned.
func (v Versioning) Enabled() bool { return v.Deployment != "" }

// Version is the deployment version a versioned worker polls as.
func (v Versioning) Version() sdkworker.WorkerDeploymentVersion {
	return sdkworker.WorkerDeploymentVersion{DeploymentName: v.Deployment, BuildID: v.BuildID}
}

// Behavior is the versioning behavior of the runs the worker starts.
func (v Versioning) Behavior() workflow.VersioningBehavior {
	if v.Pinned {
		return workflow.VersioningBehaviorPinned
	}
	return workflow.VersioningBehaviorAutoUpgrade
}

// String names the version as Temporal's CLI does: deployment:build.
func (v Versioning) String() string {
	if !v.Enabled() {
		return "unversioned"
	}
	return v.Deployment + ":" + v.BuildID
}

// Validate checks the names as the Temporal server would, so a bad one
// stops start-up with a clear message rather than failing every poll.
func (v Versioning) Validate() error {
	if !v.Enabled() {
		return nil
	}
	var errs []error
	if strings.ContainsAny(v.Deployment, ".:") || strings.HasPrefix(v.Deployment, "__") || len(v.Deployment) > maxVersionField {
		errs = append(errs, fmt.Errorf("deployment name %q: must not contain '.' or ':', start with '__' or exceed %d bytes", v.Deployment, maxVersionField))
	}
	if v.BuildID == "" || strings.HasPrefix(v.BuildID, "__") || len(v.BuildID) > maxVersionField {
		errs = append(errs, fmt.Errorf("build id %q: must not be empty, start with '__' or exceed %d bytes", v.BuildID, maxVersionField))
	}
	return errors.Join(errs...)
}

// maxVersionField is the longest deployment name or build id the server
// takes with its default ID length limit (1000), with room to spare.
const maxVersionField = 255

// Apply sets o to poll as v (no change for an unversioned v).
func (v Versioning) Apply(o *sdkworker.Options) {
	if !v.Enabled() {
		return
	}
	o.DeploymentOptions = sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   v.Version(),
		DefaultVersioningBehavior: v.Behavior(),
	}
}

// PromoteTimeout bounds how long Promote waits for the server to know the
// new version and take it as current.
const PromoteTimeout = 2 * time.Minute

// Promote makes v the current version of its deployment, so that new runs,
// and the next task of every auto-upgrading or unversioned run, go to
// workers of v. The server takes a version only once it has seen a worker
// of it poll, so call Promote after starting one; it retries until the
// server agrees or PromoteTimeout passes. Promoting the current version
// again is a no-op, so every worker of a version may call it.
func Promote(ctx context.Context, c client.Client, v Versioning) error {
	if !v.Enabled() {
		return nil
	}
	if err := v.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, PromoteTimeout)
	defer cancel()
	h := c.WorkerDeploymentClient().GetHandle(v.Deployment)
	var (
		last      error // the last attempt's error, for the message when time runs out
		permanent bool
	)
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		last = promoteOnce(ctx, h, v.BuildID)
		if last != nil && !retryable(last) {
			permanent = true
			return struct{}{}, backoff.Permanent(last)
		}
		return struct{}{}, last
	},
		backoff.WithBackOff(&backoff.ExponentialBackOff{
			InitialInterval: 50 * time.Millisecond,
			MaxInterval:     2 * time.Second,
			Multiplier:      2,
		}),
		// PromoteTimeout, through ctx, bounds the retries.
		backoff.WithMaxElapsedTime(0),
	)
	switch {
	case err == nil:
		return nil
	case permanent:
		return fmt.Errorf("make %s the current version: %w", v, err)
	default:
		return fmt.Errorf("make %s the current version: %w (last: %w)", v, err, last)
	}
}

func promoteOnce(ctx context.Context, h client.WorkerDeploymentHandle, buildID string) error {
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return err
	}
	if cur := d.Info.RoutingConfig.CurrentVersion; cur != nil && cur.BuildID == buildID {
		return nil
	}
	// The conflict token makes this a compare-and-set: when another worker
	// or an operator changed the routing since Describe, the server refuses
	// and the next round looks again.
	_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID:       buildID,
		ConflictToken: d.ConflictToken,
	})
	return err
}

// retryable tells the errors that pass once the server has registered the
// version (not found, no pollers seen yet, a concurrent change) from those
// that never will (bad names, no permission, a server without worker
// deployments).
func retryable(err error) bool {
	var (
		invalid    *serviceerror.InvalidArgument
		denied     *serviceerror.PermissionDenied
		unimpl     *serviceerror.Unimplemented
		nsNotFound *serviceerror.NamespaceNotFound
	)
	return !errors.As(err, &invalid) && !errors.As(err, &denied) && !errors.As(err, &unimpl) && !errors.As(err, &nsNotFound)
}
