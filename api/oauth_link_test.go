package api_test

import (
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/longhaul-dev/longhaul/internal/testing/storetest"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
	"github.com/longhaul-dev/longhaul/skills"
)

// linkAPI serves an API whose only part in use is the users' credentials,
// for the MCP server "secure" behind as, with no keys (users named by the
// X-OpenWebUI-User-Id header), and returns its URL and the service. The
// service's clock is now plus *skew.
func linkAPI(t *testing.T, as *authServer, skew *atomic.Int64) (string, *usercreds.Service) {
	t.Helper()
	st := storetest.SQLiteStore(t)
	box, err := usercreds.NewBox(testTokenKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	svc := &usercreds.Service{Store: st.(store.Credentials), Box: box, PublicURL: base,
		Servers: map[string]usercreds.Server{"secure": {URL: as.URL + "/mcp"}},
		Now:     func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
	catalog, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{TaskQueue: "q", Credentials: svc}, runs.NewTemporal(panicking{}, runs.Config{TaskQueue: "q"}), catalog, nil)
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		ctx := within(t, 5*time.Second)
		_ = srv.Shutdown(ctx)
	})
	return base, svc
}

// testBrowser is a browser with its own cookies, logged in at the
// authorization server as login. It follows no redirect by itself.
type testBrowser struct {
	t     *testing.T
	login string
	c     *http.Client
}

func newBrowser(t *testing.T, login string) *testBrowser {
	jar, _ := cookiejar.New(nil)
	return &testBrowser{t: t, login: login, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends one request and returns the status, the Location header and the
// body.
func (b *testBrowser) do(method, link string, form url.Values) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, link, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("X-Test-Login", b.login)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(raw)
}

var confirmRE = regexp.MustCompile(`name=confirm value="([^"]+)"`)

// open opens a connect link and returns the page's confirmation value.
func (b *testBrowser) open(link string) (page, confirm string) {
	b.t.Helper()
	status, _, page := b.do("GET", link, nil)
	m := confirmRE.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		b.t.Fatalf("%s opens %s: %d %s", b.login, link, status, page)
	}
	return page, m[1]
}

// confirm POSTs the connect page's form and returns the authorization
// server's URL it is sent to.
func (b *testBrowser) confirm(link, value string) string {
	b.t.Helper()
	status, loc, body := b.do("POST", link, url.Values{"confirm": {value}})
	if status != http.StatusSeeOther || loc == "" {
		b.t.Fatalf("%s confirms %s: %d %s", b.login, link, status, body)
	}
	return loc
}

// authorize approves at the authorization server and returns Longhaul's
// callback URL it redirects to.
func (b *testBrowser) authorize(authURL string) string {
	b.t.Helper()
	status, loc, body := b.do("GET", authURL, nil)
	if status != http.StatusFound {
		b.t.Fatalf("%s authorizes at %s: %d %s", b.login, authURL, status, body)
	}
	return loc
}

// TestOAuthLinkBoundToRequester: a connect link given
// to user A and sent to V must not attach V's account to A. The link in a
// tool result or API answer is a Longhaul link with no OAuth state; opening
// it starts nothing but a page that names A; the authorization starts only
// on that page's POST, which another site cannot forge; and the flow
// completes only in the browser that confirmed, so an authorization URL
// that A (or whoever read the link) confirmed and passed on to V ends in a
// refusal at V's callback. Links work once and expire.
func TestOAuthLinkBoundToRequester(t *testing.T) {
	as := newAuthServer(t)
	var skew atomic.Int64
	base, svc := linkAPI(t, as, &skew)
	alice := map[string]string{"X-OpenWebUI-User-Id": "alice"}
	link := func() string {
		t.Helper()
		resp := doAt(t, base, "GET", "/v1/connections/secure/authorize?redirect=false", nil, alice)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("authorize route: status %d", resp.StatusCode)
		}
		l := decode[wire.AuthorizeLink](t, resp).URL
		if !strings.HasPrefix(l, base+usercreds.ConnectPath) || strings.Contains(l, "state=") || strings.Contains(l, as.URL) {
			t.Fatalf("the connect link is %q, want a Longhaul link %s<id> with no OAuth state in it", l, base+usercreds.ConnectPath)
		}
		return l
	}
	connected := func(user string) bool {
		t.Helper()
		list, err := svc.Connections(t.Context(), user)
		if err != nil || len(list) != 1 {
			t.Fatalf("connections of %s: %v, %v", user, list, err)
		}
		return list[0].Connected
	}
	as.mu.Lock()
	nClients := len(as.clients)
	as.mu.Unlock()

	// Opening the link starts nothing: the page names the Longhaul user.
	victim := newBrowser(t, "victim")
	l := link()
	page, _ := victim.open(l)
	if !strings.Contains(page, "alice") || !strings.Contains(page, "secure") {
		t.Errorf("the connect page does not name the user and server: %s", page)
	}
	as.mu.Lock()
	if len(as.codes) != 0 || len(as.clients) != nClients {
		t.Errorf("opening the link reached the authorization server")
	}
	as.mu.Unlock()

	// A POST another site makes the victim's browser send carries no
	// confirmation value it could know (and, SameSite=Lax, no cookie);
	// a POST without the browser cookie is refused as well.
	if status, _, _ := victim.do("POST", l, url.Values{"confirm": {"guess"}}); status != http.StatusForbidden {
		t.Errorf("a POST with a wrong confirmation: %d, want 403", status)
	}
	stranger := newBrowser(t, "victim")
	if status, _, _ := stranger.do("POST", l, url.Values{"confirm": {"guess"}}); status != http.StatusForbidden {
		t.Errorf("a POST without the browser cookie: %d, want 403", status)
	}

	// The requester confirms and passes the authorization URL on to the
	// victim, who approves: the callback in the victim's browser connects
	// nothing.
	attacker := newBrowser(t, "alice")
	_, value := attacker.open(l)
	authURL := attacker.confirm(l, value)
	if !strings.HasPrefix(authURL, as.URL+"/authorize?") || !strings.Contains(authURL, "state=") {
		t.Fatalf("confirming sent the browser to %q, want the authorization server", authURL)
	}
	callback := victim.authorize(authURL)
	if status, _, body := victim.do("GET", callback, nil); status != http.StatusForbidden || connected("alice") {
		t.Fatalf("the victim's browser finished alice's flow: %d %s; alice connected: %v", status, body, connected("alice"))
	}
	// The link is spent: confirming it again is refused.
	if status, _, _ := attacker.do("POST", l, url.Values{"confirm": {value}}); status != http.StatusBadRequest {
		t.Errorf("a spent link confirmed again: %d, want 400", status)
	}

	// The requester's own browser completes the flow, once.
	l = link()
	_, value = attacker.open(l)
	callback = attacker.authorize(attacker.confirm(l, value))
	if status, _, body := attacker.do("GET", callback, nil); status != http.StatusOK || !connected("alice") {
		t.Fatalf("alice's own flow: %d %s", status, body)
	}
	if status, _, _ := attacker.do("GET", callback, nil); status != http.StatusBadRequest {
		t.Errorf("a replayed callback: %d, want 400", status)
	}

	// Links expire quickly.
	l = link()
	skew.Store(int64(usercreds.DefaultLinkTTL + time.Second))
	if status, _, _ := attacker.do("GET", l, nil); status != http.StatusBadRequest {
		t.Errorf("an expired link: %d, want 400", status)
	}
	if usercreds.DefaultLinkTTL > 10*time.Minute || usercreds.DefaultStateTTL > 10*time.Minute {
		t.Errorf("links live %s and states %s, want at most 10 minutes each", usercreds.DefaultLinkTTL, usercreds.DefaultStateTTL)
	}
}
