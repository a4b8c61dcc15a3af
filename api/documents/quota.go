package documents

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/docstore"
)

// The per-principal quotas of documents (Limits' Files, FileBytes and
// Ingestions): what one principal stores and has being ingested, counted
// in the document store (docstore.Usage), so across every API process.
// Files and bytes are checked before a file is stored and again after:
// two uploads racing past the quota are both refused, neither kept.

// retryIngestions is the Retry-After of a 429 for too many ingestions, in
// seconds: one frees up when a file's ingestion ends.
const retryIngestions = 30

// errQuota is a 403: the principal holds as much as the quota allows, and
// asking again will not help until something is deleted (a 429 would be
// retried by OpenAI's client libraries).
func errQuota(msg string) error {
	return web.New(web.KindQuotaExceeded, msg)
}

// usage is what the owner holds, for the quotas.
func (h *Handlers) usage(ctx context.Context, owner string) (docstore.Usage, error) {
	u, err := h.Docs.Usage(ctx, owner)
	if err != nil {
		return docstore.Usage{}, h.StoreError(err, "no usage")
	}
	return u, nil
}

// FileRoom checks the owner may store one more file, of adding bytes,
// and returns how many bytes the owner may still store (the upload
// limit, when the byte quota leaves more).
func (h *Handlers) FileRoom(ctx context.Context, owner string, adding int64) (int64, error) {
	l := h.Quotas
	room := h.MaxFileBytes
	if l.Files <= 0 && l.FileBytes <= 0 {
		return room, nil
	}
	u, err := h.usage(ctx, owner)
	if err != nil {
		return 0, err
	}
	if err := h.overQuota(u, 1, adding); err != nil {
		return 0, err
	}
	if l.FileBytes > 0 {
		room = min(room, l.FileBytes-u.Bytes)
	}
	return room, nil
}

// overQuota is the error of usage u grown by files files of bytes bytes,
// when that passes a quota.
func (h *Handlers) overQuota(u docstore.Usage, files int, bytes int64) error {
	l := h.Quotas
	switch {
	case l.Files > 0 && u.Files+files > l.Files:
		return errQuota(fmt.Sprintf("too many files: you store %d, at most %d (LONGHAUL_MAX_FILES); delete some to store more", u.Files, l.Files))
	case l.FileBytes > 0 && u.Bytes+bytes > l.FileBytes:
		return errQuota(fmt.Sprintf("not enough file storage: you store %d bytes, at most %d (LONGHAUL_MAX_FILE_STORAGE), and this file needs %d more; delete some files to store more",
			u.Bytes, l.FileBytes, bytes))
	}
	return nil
}

// StoredWithin checks, once a file is stored, that the owner is within
// the quotas; the caller deletes the file when not.
func (h *Handlers) StoredWithin(ctx context.Context, owner string, f docstore.File) error {
	l := h.Quotas
	if l.Files <= 0 && l.FileBytes <= 0 {
		return nil
	}
	u, err := h.usage(ctx, owner)
	if err != nil {
		return err
	}
	u.Files--
	u.Bytes -= f.Bytes
	return h.overQuota(u, 1, f.Bytes)
}

// checkIngestions refuses, with a 429, n more ingestions of a principal
// who has as many in progress as the quota allows.
func (h *Handlers) checkIngestions(ctx context.Context, owner string, n int) error {
	limit := h.Quotas.Ingestions
	if limit <= 0 {
		return nil
	}
	u, err := h.usage(ctx, owner)
	if err != nil {
		return err
	}
	if u.Ingesting+n > limit {
		return web.TooMany(fmt.Sprintf("too many files being ingested: you have %d in progress, at most %d at once (LONGHAUL_MAX_INGESTIONS), and this asks for %d more; wait for some to finish",
			u.Ingesting, limit, n), retryIngestions)
	}
	return nil
}
