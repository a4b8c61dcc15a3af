package documents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// Purposes a file may be uploaded with: the ones file_search reads.
// OpenAI's others (files.d.ts FilePurpose: batch, fine-tune, vision,
// evals) name APIs Longhaul does not have and are refused.
var (
	filePurposes        = []string{"assistants", "user_data"}
	unsupportedPurposes = []string{"batch", "fine-tune", "vision", "evals"}
)

// uploadPurpose is the purpose a file part read before the purpose part
// is stored with (openai-node's vectorStores.files.upload sends the file
// first and "assistants": resources/vector-stores/files.js:154); a file
// then named another purpose is copied within the store.
const uploadPurpose = "assistants"

// Bounds of an upload's other parts.
const (
	maxUploadParts    = 8
	maxUploadField    = 256
	maxFilenameBytes  = 255
	multipartOverhead = 64 << 10
)

// File expiration bounds in seconds (files.d.ts ExpiresAfter: 3600 to
// 2592000 after created_at).
const (
	minFileExpiry = 3600
	maxFileExpiry = 2592000
)

// errFileTooLarge is the upload reader's error past the limit.
var errFileTooLarge = errors.New("file over the size limit")

// limitedReader fails with errFileTooLarge once more than n bytes were
// read, and remembers that it did.
type limitedReader struct {
	r        io.Reader
	n        int64
	exceeded bool
	// err is the read error of the part itself (not io.EOF): a body cut
	// short or malformed.
	err error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		l.exceeded = true
		return 0, errFileTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		l.err = err
	}
	l.n -= int64(n)
	if l.n < 0 {
		l.exceeded = true
		return n, errFileTooLarge
	}
	return n, err
}

// UploadFile is POST /v1/files: a multipart form of file, purpose and
// optionally expires_after[anchor] and expires_after[seconds], as
// openai-node's createForm encodes them (internal/uploads.js:484-528:
// objects as key[name]). The body is read as a stream (see the server's bodyLimit):
// the file part goes to the document store in parts, never whole in
// memory, and a file over LONGHAUL_MAX_FILE_BYTES is a 413 that leaves
// nothing stored.
func (h *Handlers) UploadFile(c *fiber.Ctx) error {
	if n := c.Request().Header.ContentLength(); n > 0 && int64(n) > h.MaxFileBytes+multipartOverhead {
		// Refused on its declared length, unread: the connection closes
		// (see the server's bodyLimit).
		return h.fileTooLarge()
	}
	err := h.upload(c)
	if err != nil {
		// What is left of a refused upload is read (a little at most), so
		// the client reads the answer rather than a reset connection.
		web.Drain(c, multipartOverhead)
	}
	return err
}

// upload reads, checks and stores an upload, and answers the file; a
// file stored before the upload turned out bad is deleted.
func (h *Handlers) upload(c *fiber.Ctx) error {
	mr, err := uploadReader(c)
	if err != nil {
		return err
	}
	u := &fileUpload{h: h, ctx: c.UserContext(), owner: web.Principal(c).User.Key()}
	f, err := u.complete(mr)
	if err != nil {
		u.drop()
		return err
	}
	web.Drain(c, multipartOverhead)
	return c.JSON(fileObject(f))
}

// uploadReader reads POST /v1/files's body as multipart parts, streamed.
func uploadReader(c *fiber.Ctx) (*multipart.Reader, error) {
	ct, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || ct != fiber.MIMEMultipartForm || params["boundary"] == "" {
		return nil, web.BadRequest("POST /v1/files takes a multipart/form-data body (file, purpose)")
	}
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && enc != "identity" {
		return nil, web.BadRequest("POST /v1/files takes no Content-Encoding (got " + strconv.Quote(enc) + ")")
	}
	body := c.Context().RequestBodyStream()
	if body == nil {
		body = bytes.NewReader(c.Body())
	}
	return multipart.NewReader(body, params["boundary"]), nil
}

// fileUpload is one upload as its parts are read: the file stored from
// its file part and its other parts' values.
type fileUpload struct {
	h     *Handlers
	ctx   context.Context
	owner string

	stored        *docstore.File
	purpose       string
	anchor        string
	seconds       string
	sawPurpose    bool
	sawFile       bool
	fieldsTooLong bool
}

// drop deletes a file stored before the request turned out bad.
func (u *fileUpload) drop() {
	if u.stored != nil {
		if err := u.h.Docs.DeleteFile(context.WithoutCancel(u.ctx), u.owner, u.stored.ID); err != nil {
			u.h.log().ErrorContext(u.ctx, "drop an upload refused after storing it", "file", u.stored.ID, "error", err)
		}
		u.stored = nil
	}
}

// complete reads the upload's parts, checks them, and stores the file
// again if its purpose or expiry differs from what it was stored with.
func (u *fileUpload) complete(mr *multipart.Reader) (docstore.File, error) {
	if err := u.readParts(mr); err != nil {
		return docstore.File{}, err
	}
	if err := u.check(); err != nil {
		return docstore.File{}, err
	}
	expires, err := u.expiry()
	if err != nil {
		return docstore.File{}, err
	}
	if u.stored.Purpose != u.purpose || !expires.IsZero() {
		// Read before the purpose (or with an expiry, which PutFile alone
		// sets): stored again with them, within the store.
		f, err := u.h.restore(u.ctx, *u.stored, u.purpose, expires)
		u.drop()
		if err != nil {
			return docstore.File{}, err
		}
		u.stored = &f
	}
	return *u.stored, nil
}

// readParts reads the parts in turn: the file into the store, the others'
// values into u.
func (u *fileUpload) readParts(mr *multipart.Reader) error {
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return web.BadRequest("malformed multipart body: " + err.Error())
		}
		if parts >= maxUploadParts {
			return web.BadRequest(fmt.Sprintf("multipart body: at most %d parts (file, purpose, expires_after[anchor], expires_after[seconds])", maxUploadParts))
		}
		if p.FormName() == "file" {
			err = u.storeFile(p)
		} else {
			err = u.readField(p)
		}
		if err != nil {
			return err
		}
	}
}

// storeFile streams the file part into the document store, at most
// LONGHAUL_MAX_FILE_BYTES of it, with the purpose read so far (else
// uploadPurpose).
func (u *fileUpload) storeFile(p *multipart.Part) error {
	if u.sawFile {
		return web.BadRequest("file: one file per upload")
	}
	u.sawFile = true
	filename := p.FileName()
	if filename == "" || filename == "." || len(filename) > maxFilenameBytes {
		return web.BadRequest(fmt.Sprintf("file: the part needs a filename of 1 to %d bytes", maxFilenameBytes))
	}
	want := uploadPurpose
	if u.sawPurpose {
		want = u.purpose
	}
	// The principal's quotas (LONGHAUL_MAX_FILES, _FILE_STORAGE) leave
	// room for the file, read no further than they allow.
	room, err := u.h.FileRoom(u.ctx, u.owner, 0)
	if err != nil {
		return err
	}
	lr := &limitedReader{r: p, n: room}
	f, err := u.h.Docs.PutFile(u.ctx, docstore.File{Owner: u.owner, Filename: filename, Purpose: want, ContentType: p.Header.Get(fiber.HeaderContentType)}, lr)
	if f.ID != "" {
		// Whatever comes next, drop deletes it if the upload fails.
		u.stored = &f
	}
	if lr.exceeded && room < u.h.MaxFileBytes {
		return errQuota(fmt.Sprintf("not enough file storage: this file is larger than the %d bytes you have left of %d (LONGHAUL_MAX_FILE_STORAGE); delete some files to store more; nothing was stored",
			max(room, 0), u.h.Quotas.FileBytes))
	}
	if lr.exceeded || errors.Is(err, docstore.ErrTooLarge) {
		return u.h.fileTooLarge()
	}
	if lr.err != nil {
		return web.BadRequest("malformed multipart body: the file part: " + lr.err.Error())
	}
	if err != nil {
		return u.storeError(err)
	}
	u.stored = &f
	return u.h.StoredWithin(u.ctx, u.owner, f)
}

// storeError is the answer to a store that could not take the file.
func (u *fileUpload) storeError(err error) error {
	var ae *web.Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, docstore.ErrInvalid) {
		return web.BadRequest("could not store the file: " + err.Error())
	}
	return u.h.StoreError(err, "no file")
}

// readField reads one of the other parts (purpose, expires_after[…]); a
// value too long is remembered and refused once the file is read.
func (u *fileUpload) readField(p *multipart.Part) error {
	name := p.FormName()
	v, err := io.ReadAll(io.LimitReader(p, maxUploadField+1))
	if err != nil {
		return web.BadRequest("malformed multipart body: " + err.Error())
	}
	if len(v) > maxUploadField {
		u.fieldsTooLong = true
	}
	switch name {
	case "purpose":
		u.purpose, u.sawPurpose = string(v), true
	case "expires_after[anchor]":
		u.anchor = string(v)
	case "expires_after[seconds]":
		u.seconds = string(v)
	default:
		return web.BadRequest("unknown multipart field " + strconv.Quote(name) + " (POST /v1/files takes file, purpose and expires_after)")
	}
	return nil
}

// check checks that the upload had a file and a purpose Longhaul reads.
func (u *fileUpload) check() error {
	switch {
	case u.fieldsTooLong:
		return web.BadRequest(fmt.Sprintf("a multipart field is longer than %d bytes", maxUploadField))
	case !u.sawFile:
		return web.BadRequest("file: required (a multipart part named file, with a filename)")
	case !u.sawPurpose:
		return web.BadRequest("purpose: required, one of " + strings.Join(filePurposes, ", "))
	case contains(unsupportedPurposes, u.purpose):
		return web.BadRequest("purpose " + strconv.Quote(u.purpose) + " is not supported: Longhaul has no API that reads it; use " + strings.Join(filePurposes, " or "))
	case !contains(filePurposes, u.purpose):
		return web.BadRequest("purpose: must be one of " + strings.Join(filePurposes, ", ") + ", got " + strconv.Quote(u.purpose))
	}
	return nil
}

// expiry is when the stored file expires by expires_after (zero: never).
func (u *fileUpload) expiry() (time.Time, error) {
	if u.anchor == "" && u.seconds == "" {
		return time.Time{}, nil
	}
	if u.anchor != "created_at" {
		return time.Time{}, web.BadRequest("expires_after[anchor]: must be created_at, got " + strconv.Quote(u.anchor))
	}
	n, err := strconv.Atoi(u.seconds)
	if err != nil || n < minFileExpiry || n > maxFileExpiry {
		return time.Time{}, web.BadRequest(fmt.Sprintf("expires_after[seconds]: must be a number from %d to %d", minFileExpiry, maxFileExpiry))
	}
	return u.stored.CreatedAt.Add(time.Duration(n) * time.Second), nil
}

// restore stores f's content again as a file of purpose expiring at
// expires (zero: never).
func (h *Handlers) restore(ctx context.Context, f docstore.File, purpose string, expires time.Time) (docstore.File, error) {
	rc, err := h.Docs.OpenFile(ctx, f.Owner, f.ID)
	if err != nil {
		return docstore.File{}, h.StoreError(err, "no file "+strconv.Quote(f.ID))
	}
	defer rc.Close()
	nf, err := h.Docs.PutFile(ctx, docstore.File{Owner: f.Owner, Filename: f.Filename, Purpose: purpose, ContentType: f.ContentType, ExpiresAt: expires}, rc)
	if err != nil {
		return docstore.File{}, h.StoreError(err, "no file "+strconv.Quote(f.ID))
	}
	return nf, nil
}

func (h *Handlers) fileTooLarge() error {
	return web.PayloadTooLarge(fmt.Sprintf("file is larger than the limit of %d bytes (LONGHAUL_MAX_FILE_BYTES); nothing was stored", h.MaxFileBytes))
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// page reads a list request's limit, after, before and order.
func page(c *fiber.Ctx) (docstore.Page, error) {
	p := docstore.Page{After: c.Query("after"), Before: c.Query("before")}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return p, web.BadRequest("limit: must be a number from 1 to 100")
		}
		p.Limit = n
	}
	switch c.Query("order", "desc") {
	case "desc":
	case "asc":
		p.Ascending = true
	default:
		return p, web.BadRequest("order: must be asc or desc")
	}
	if p.After != "" && p.Before != "" {
		return p, web.BadRequest("after and before: give one of them")
	}
	return p, nil
}

// sendList answers a list route: it reads the request's page (see page),
// lists it, and sends the items rendered as a wire.CursorPage, first_id and
// last_id being the ids of its first and last item. list's error is
// returned as it is: list translates it.
func sendList[D, T any](c *fiber.Ctx, list func(docstore.Page) ([]D, bool, error), render func(D) T, id func(D) string) error {
	p, err := page(c)
	if err != nil {
		return err
	}
	items, more, err := list(p)
	if err != nil {
		return err
	}
	out := wire.CursorPage[T]{Object: "list", Data: make([]T, 0, len(items)), HasMore: more}
	for _, it := range items {
		out.Data = append(out.Data, render(it))
	}
	if len(items) > 0 {
		first, last := id(items[0]), id(items[len(items)-1])
		out.FirstID, out.LastID = &first, &last
	}
	return c.JSON(out)
}

// ListFiles is GET /v1/files (purpose, limit, after, order).
func (h *Handlers) ListFiles(c *fiber.Ctx) error {
	return sendList(c, func(p docstore.Page) ([]docstore.File, bool, error) {
		files, more, err := h.Docs.ListFiles(c.UserContext(), web.Principal(c).User.Key(), c.Query("purpose"), p)
		if err != nil {
			return nil, false, h.StoreError(err, "no file "+strconv.Quote(p.After+p.Before))
		}
		return files, more, nil
	}, fileObject, func(f docstore.File) string { return f.ID })
}

// GetFile is GET /v1/files/{id}.
func (h *Handlers) GetFile(c *fiber.Ctx) error {
	docs := h.Docs
	id := c.Params("id")
	f, err := docs.GetFile(c.UserContext(), web.Principal(c).User.Key(), id)
	if err != nil {
		return h.StoreError(err, "no file "+strconv.Quote(id))
	}
	return c.JSON(fileObject(f))
}

// FileContent is GET /v1/files/{id}/content: the bytes as uploaded,
// streamed from the store.
func (h *Handlers) FileContent(c *fiber.Ctx) error {
	docs := h.Docs
	id := c.Params("id")
	owner := web.Principal(c).User.Key()
	f, err := docs.GetFile(c.UserContext(), owner, id)
	if err != nil {
		return h.StoreError(err, "no file "+strconv.Quote(id))
	}
	rc, err := docs.OpenFile(c.UserContext(), owner, id)
	if err != nil {
		return h.StoreError(err, "no file "+strconv.Quote(id))
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	// fasthttp closes the stream once it is sent (RequestCtx.SetBodyStream).
	return c.SendStream(rc, int(f.Bytes))
}

// DeleteFile is DELETE /v1/files/{id}: the file, and it in every vector
// store.
func (h *Handlers) DeleteFile(c *fiber.Ctx) error {
	docs := h.Docs
	id := c.Params("id")
	if err := docs.DeleteFile(c.UserContext(), web.Principal(c).User.Key(), id); err != nil {
		return h.StoreError(err, "no file "+strconv.Quote(id))
	}
	return c.JSON(wire.DeletedObject{ID: id, Object: "file", Deleted: true})
}
