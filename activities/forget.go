package activities

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
)

// MarkDeleted marks run deleted in the blob store (contract.DeletedRunKind),
// as the Responses API does when it deletes a run: the API then reads the
// run as gone. A run not to be kept (contract.AgentInput.Forget) calls it
// at its end. Marking again is harmless: Put stores the same blob once.
func (a *Activities) MarkDeleted(ctx context.Context, run string) error {
	if a.Blobs == nil {
		return nil // no store: the API has none to read a mark from either
	}
	if _, err := a.Blobs.Put(ctx, store.Blob{Run: run, Kind: contract.DeletedRunKind, Name: "run", Data: []byte("deleted")}); err != nil {
		return fmt.Errorf("mark run %s deleted: %w", run, err)
	}
	return nil
}
