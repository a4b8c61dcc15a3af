package webtest

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/docstore"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// MultipartBody is an upload as openai-node sends one: the file part
// first, then the fields (internal/uploads.js:235, createForm in the
// order of the params object). It returns the content type and the body.
func MultipartBody(t testing.TB, filename string, content []byte, fields ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		w.WriteField(fields[i], fields[i+1])
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

// UploadRequest is POST url with a multipart body of content type ct and
// the key's headers.
func UploadRequest(url string, key map[string]string, ct string, body []byte) *http.Request {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	for k, v := range key {
		req.Header.Set(k, v)
	}
	return req
}

// CountFiles counts the files owner keeps in docs (up to 100).
func CountFiles(t testing.TB, docs docstore.Store, owner string) int {
	t.Helper()
	files, _, err := docs.ListFiles(context.Background(), owner, "", docstore.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// Uploaded reads the file object of a successful upload; another answer
// fails t with its status and body.
func Uploaded(t testing.TB, resp *http.Response) wire.FileObject {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload = %d %s", resp.StatusCode, b)
	}
	return Decode[wire.FileObject](t, resp)
}
