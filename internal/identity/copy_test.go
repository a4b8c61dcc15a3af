package identity

import (
	"net/http"
	"slices"
	"testing"
	"unsafe"
)

// TestResolveCopiesHeaderBuffers: fiber's c.Get answers a string over
// fasthttp's request buffer, which the connection's next request
// overwrites. The principal Resolve returns outlives the request (the
// stream-limit map, a run's input), so none of its strings may alias what
// header returned.
func TestResolveCopiesHeaderBuffers(t *testing.T) {
	keys, _ := ParseKeys(nil, []string{"owui:sk-owui"})
	r := &Resolver{Keys: keys, Headers: Headers{UserID: "Id", UserEmail: "Email", UserName: "Name", UserRole: "Role", UserGroups: "Groups"}}
	h := http.Header{}
	h.Set("Id", "ann")
	h.Set("Email", "ann@example.com")
	h.Set("Name", "Ann")
	h.Set("Role", "admin")
	h.Set("Groups", "staff,ops")
	// One buffer per header, as fasthttp keeps them; a string over it.
	bufs := map[string][]byte{}
	header := func(name string) string {
		v := h.Get(name)
		if v == "" {
			return ""
		}
		b := []byte(v)
		bufs[name] = b
		return unsafe.String(&b[0], len(b))
	}
	for _, open := range []bool{false, true} {
		rr := r
		auth := "Bearer sk-owui"
		if open {
			rr, auth = &Resolver{Headers: r.Headers}, ""
		}
		p, err := rr.Resolve(auth, header)
		if err != nil {
			t.Fatal(err)
		}
		// The next request on the connection: same lengths, other bytes.
		for _, b := range bufs {
			for i := range b {
				b[i] = 'x'
			}
		}
		want := "owui/ann"
		if open {
			want = "ann"
		}
		if p.Name != want || p.User.Principal != want || p.User.ID != "ann" || p.User.Email != "ann@example.com" ||
			p.User.Name != "Ann" || p.User.Role != "admin" || !slices.Equal(p.User.Groups, []string{"staff", "ops"}) {
			t.Errorf("open %v: after the buffers were reused the principal reads %q, user %+v", open, p.Name, p.User)
		}
	}
}
