package chatapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/documents"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// fileIngestWait bounds how long a chat request waits for the ingestion of
// the files its file parts carry before it answers 504 (the ingestion goes
// on; the same request sent again finds the files and waits again).
const fileIngestWait = 3 * time.Minute

// chatFileSource marks, in its attributes, an attachment whose file the
// API stored from a file part's data: deleting the chat deletes that file
// too, never a file the principal uploaded and named by file_id.
const chatFileSource = "chat_file_part"

// runFileStoreDays is how long the store of a request without a chat id
// lives after its last search.
const runFileStoreDays = 1

// chatFiles stores the file parts of msgs for owner, attaches them to the
// chat's vector store (Docs.ChatVectorStore; without a chat, a store of
// their own that expires a day after its last use), starts their
// ingestion and waits for it, then puts a note in each part's place. It
// returns the store's id, or "" when the messages have no file parts. A
// file part whose data was stored before in the same store (a client
// sends the whole conversation again each turn) is not stored again. A
// background task (a title) gets the notes only.
func (h *Handlers) chatFiles(ctx context.Context, owner, chat string, msgs []wire.ChatMessage, background bool) (string, error) {
	n := 0
	for _, m := range msgs {
		n += len(m.Content.Files)
	}
	if n == 0 {
		return "", nil
	}
	if background {
		for i := range msgs {
			for j, f := range msgs[i].Content.Files {
				msgs[i].Content.NoteFile(j, "[attached file "+fileLabel(f)+"]")
			}
		}
		return "", nil
	}
	docs, err := h.Docs.Store()
	if err != nil {
		return "", web.BadRequest("file content parts need the document store, which this server does not have")
	}
	var vs docstore.VectorStore
	if chat != "" {
		vs, err = docs.ChatVectorStore(ctx, owner, chat)
	} else {
		vs, err = docs.CreateVectorStore(ctx, docstore.VectorStore{Owner: owner, Name: "chat completion files",
			ExpiresAfter: &docstore.ExpiresAfter{Anchor: "last_active_at", Days: runFileStoreDays}})
	}
	if err != nil {
		return "", h.Docs.StoreError(err, "no vector store for this chat")
	}
	ingesting := map[string]docstore.VectorStoreFile{}
	names := map[string]string{}
	var order []string
	for i := range msgs {
		for j, f := range msgs[i].Content.Files {
			id, name, err := h.chatFile(ctx, docs, owner, vs.ID, f)
			if err != nil {
				return "", fmt.Errorf("messages[%d]: %w", i, err)
			}
			msgs[i].Content.NoteFile(j, "[attached file "+name+" — searchable with "+longhaul.DocumentSearchTool+"]")
			if _, seen := names[id]; seen {
				continue
			}
			names[id] = name
			order = append(order, id)
			attrs := map[string]any(nil)
			if f.FileID == "" {
				attrs = map[string]any{"source": chatFileSource}
			}
			vsf, err := h.Docs.AttachFile(ctx, owner, vs.ID, id, "", attrs, defaultChunking())
			if err != nil {
				return "", err
			}
			ingesting[id] = vsf
		}
	}
	wctx, cancel := context.WithTimeout(ctx, fileIngestWait)
	defer cancel()
	for _, id := range order {
		if err := h.awaitIngest(wctx, ingesting[id], names[id]); err != nil {
			return "", err
		}
	}
	return vs.ID, nil
}

// defaultChunking is OpenAI's static strategy with its default sizes.
func defaultChunking() docstore.ChunkingStrategy {
	return docstore.ChunkingStrategy{Type: "static", MaxChunkSizeTokens: documents.DefaultChunkTokens, ChunkOverlapTokens: documents.DefaultOverlapTokens}
}

// fileLabel names a file part before it is stored.
func fileLabel(f wire.FilePart) string {
	if f.Filename != "" {
		return path.Base(f.Filename)
	}
	if f.FileID != "" {
		return f.FileID
	}
	return "file"
}

// chatFile returns the file a part names: the owner's uploaded file for a
// file_id, else the part's data, stored unless the store has it already.
func (h *Handlers) chatFile(ctx context.Context, docs docstore.Store, owner, vsID string, f wire.FilePart) (id, name string, err error) {
	if f.FileID != "" {
		got, err := docs.GetFile(ctx, owner, f.FileID)
		if err != nil {
			return "", "", h.Docs.StoreError(err, "no file "+f.FileID)
		}
		return got.ID, got.Filename, nil
	}
	data, contentType, err := decodeFileData(f.FileData)
	if err != nil {
		return "", "", web.BadRequest("file.file_data: " + err.Error())
	}
	if int64(len(data)) > h.Docs.MaxFileBytes {
		return "", "", web.PayloadTooLarge(fmt.Sprintf("file is larger than the limit of %d bytes (LONGHAUL_MAX_FILE_BYTES)", h.Docs.MaxFileBytes))
	}
	name = fileLabel(f)
	if name == "file" && contentType == "application/pdf" {
		name = "file.pdf"
	}
	sum := sha256.Sum256(data)
	if id, ok, err := storedCopy(ctx, docs, owner, vsID, name, hex.EncodeToString(sum[:])); err != nil {
		return "", "", h.Docs.StoreError(err, "no vector store "+vsID)
	} else if ok {
		return id, name, nil
	}
	if contentType == "" {
		contentType = mime.TypeByExtension(path.Ext(name))
	}
	if _, err := h.Docs.FileRoom(ctx, owner, int64(len(data))); err != nil {
		return "", "", err
	}
	stored, err := docs.PutFile(ctx, docstore.File{Owner: owner, Filename: name, Purpose: "user_data", ContentType: contentType}, bytes.NewReader(data))
	if err != nil {
		return "", "", h.Docs.StoreError(err, "no file")
	}
	if err := h.Docs.StoredWithin(ctx, owner, stored); err != nil {
		if derr := docs.DeleteFile(context.WithoutCancel(ctx), owner, stored.ID); derr != nil {
			h.Runs.Logger().ErrorContext(ctx, "drop a file part over the quota", "file", stored.ID, "error", derr)
		}
		return "", "", err
	}
	return stored.ID, name, nil
}

// storedCopy finds, among the files the API stored from file parts into
// the store, one with this name and content.
func storedCopy(ctx context.Context, docs docstore.Store, owner, vsID, name, sha string) (string, bool, error) {
	p := docstore.Page{Limit: 100}
	for {
		files, more, err := docs.ListVectorStoreFiles(ctx, owner, vsID, "", "", p)
		if err != nil {
			return "", false, err
		}
		for _, vsf := range files {
			if vsf.Attributes["source"] != chatFileSource {
				continue
			}
			f, err := docs.GetFile(ctx, owner, vsf.FileID)
			if errors.Is(err, docstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return "", false, err
			}
			if f.SHA256 == sha && f.Filename == name {
				return f.ID, true, nil
			}
		}
		if !more || len(files) == 0 {
			return "", false, nil
		}
		p.After = files[len(files)-1].FileID
	}
}

// decodeFileData decodes file_data: a data URL
// ("data:application/pdf;base64,…", as OpenAI's guide sends it) or bare
// base64, returning the bytes and the data URL's media type.
func decodeFileData(s string) ([]byte, string, error) {
	contentType := ""
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		meta, payload, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return nil, "", errors.New(`a data URL must be "data:<media type>;base64,<data>"`)
		}
		contentType = strings.TrimSuffix(meta, ";base64")
		s = payload
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, "", errors.New("not valid base64")
	}
	if len(data) == 0 {
		return nil, "", errors.New("the file is empty")
	}
	return data, contentType, nil
}

// awaitIngest waits for an attachment's ingestion run to end: an
// ingestion that failed is the client's 400 (the file is not readable), a
// wait past the bound a 504.
func (h *Handlers) awaitIngest(ctx context.Context, vsf docstore.VectorStoreFile, name string) error {
	failed := func(msg string) error {
		return web.BadRequest(fmt.Sprintf("file %s could not be read: %s", name, msg))
	}
	switch vsf.Status {
	case docstore.StatusCompleted:
		return nil
	case docstore.StatusFailed, docstore.StatusCancelled:
		msg := vsf.Status
		if vsf.LastError != nil {
			msg = vsf.LastError.Message
		}
		return failed(msg)
	}
	run := vsf.Run
	if run == "" {
		run = contract.IngestWorkflowID(vsf.VectorStoreID, vsf.FileID)
	}
	res, err := h.Runs.Service.AwaitIngest(ctx, run)
	switch {
	case ctx.Err() != nil:
		return web.Timeout(fmt.Sprintf("file %s is still being read (ingestion run %s); send the request again to wait for it", name, run))
	case err != nil:
		return web.Unavailable(fmt.Sprintf("reading file %s failed: %v", name, err))
	case res.Status != docstore.StatusCompleted:
		msg := res.Message
		if msg == "" {
			msg = res.Status
		}
		return failed(msg)
	}
	return nil
}

// DeleteChatFiles deletes the chat's vector store, and the files the API
// stored from the chat's file parts, when the chat is deleted.
func (h *Handlers) DeleteChatFiles(ctx context.Context, owner, chat string) error {
	if h.Docs.Docs == nil {
		return nil
	}
	docs := h.Docs.Docs
	vs, err := docs.ChatVectorStore(ctx, owner, chat)
	if err != nil {
		return err
	}
	// Each round deletes a page; a bounded number of rounds, so a file
	// that will not go cannot keep the request here.
	for range 100 {
		files, _, err := docs.ListVectorStoreFiles(ctx, owner, vs.ID, "", "", docstore.Page{Limit: 100})
		if err != nil {
			return err
		}
		if len(files) == 0 {
			break
		}
		for _, f := range files {
			if f.Attributes["source"] == chatFileSource {
				err = docs.DeleteFile(ctx, owner, f.FileID)
			} else {
				err = docs.DetachFile(ctx, owner, vs.ID, f.FileID)
			}
			if err != nil && !errors.Is(err, docstore.ErrNotFound) {
				return err
			}
		}
	}
	err = docs.DeleteVectorStore(ctx, owner, vs.ID)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil
	}
	return err
}
