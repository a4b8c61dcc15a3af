package usageapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/usageapi"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/budget"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// app serves the usage route over a ledger holding alice's and bob's
// calls, the caller named by the X-Test-Principal and X-Test-Role headers.
func app(t *testing.T) *fiber.App {
	t.Helper()
	ctx := context.Background()
	prices, _ := budget.ParsePrices("gpt=2/10")
	l, err := budget.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "l.db"), nil, prices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	for _, c := range []budget.Call{
		{ID: "1", Principal: "alice", Key: "alice", Agent: "assistant", Model: "gpt"},
		{ID: "2", Principal: "alice", Key: "alice", Agent: "researcher", Model: "gpt"},
		{ID: "3", Principal: "bob", Key: "bob", Agent: "assistant", Model: "gpt"},
		{ID: "4", Principal: "owui/ann", Key: "owui", Agent: "assistant", Model: "gpt"},
		{ID: "5", Principal: "owui/cy", Key: "owui", Agent: "assistant", Model: "gpt"},
		{ID: "6", Principal: "other/dee", Key: "other", Agent: "assistant", Model: "gpt"},
	} {
		if err := l.Settle(ctx, c, 1000, 100); err != nil {
			t.Fatal(err)
		}
	}
	a := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		var we *web.Error
		if errors.As(err, &we) {
			return c.Status(we.Status).JSON(fiber.Map{"error": fiber.Map{"message": we.Message, "code": we.Code}})
		}
		return c.Status(500).SendString(err.Error())
	}})
	a.Use(func(c *fiber.Ctx) error {
		name := c.Get("X-Test-Principal")
		web.SetPrincipal(c, identity.Principal{Name: name, Key: budget.KeyOf(name), User: longhaul.User{Principal: name, Role: c.Get("X-Test-Role")}})
		return c.Next()
	})
	h := &usageapi.Handlers{Store: l, Operators: []string{"ops"}}
	a.Get("/v1/usage", h.Get)
	return a
}

func get(t *testing.T, a *fiber.App, query, who, role string) (int, usageapi.Response) {
	t.Helper()
	req := httptest.NewRequest("GET", "/v1/usage"+query, nil)
	req.Header.Set("X-Test-Principal", who)
	req.Header.Set("X-Test-Role", role)
	resp, err := a.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out usageapi.Response
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, out
}

// principals are the principals rows name.
func principals(r usageapi.Response) []string {
	var out []string
	for _, d := range r.Data {
		out = append(out, d.Principal)
	}
	return out
}

// TestUsageOperatorSeesAll: an operator key's answer holds every
// principal's spend, of every key, grouped as asked, with its cost in
// dollars.
func TestUsageOperatorSeesAll(t *testing.T) {
	a := app(t)
	status, r := get(t, a, "?group_by=principal,agent", "ops", "")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	row := budget.Row{Agent: "assistant", Calls: 1, TokensIn: 1000, TokensOut: 100}
	with := func(p, agent string) usageapi.Row {
		r := row
		r.Principal, r.Agent = p, agent
		return usageapi.Row{Row: r, CostUSD: 0.003}
	}
	want := []usageapi.Row{
		with("alice", "assistant"), with("alice", "researcher"), with("bob", "assistant"),
		with("other/dee", "assistant"), with("owui/ann", "assistant"), with("owui/cy", "assistant"),
	}
	if d := cmp.Diff(want, r.Data); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, r := get(t, a, "?group_by=principal&principal=bob", "ops", ""); !cmp.Equal(principals(r), []string{"bob"}) {
		t.Errorf("operator's principal=bob: %v", principals(r))
	}
}

// TestUsageTenantAdminSeesOnlyItsKey: an admin behind one proxy key (a
// tenant's Open WebUI admin) read every tenant's usage. An admin sees its
// own key's principals only, and naming another key's is refused; an
// end user of the operator key's name is no operator.
func TestUsageTenantAdminSeesOnlyItsKey(t *testing.T) {
	a := app(t)
	status, r := get(t, a, "?group_by=principal", "owui/ann", usageapi.OperatorRole)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if d := cmp.Diff([]string{"owui/ann", "owui/cy"}, principals(r)); d != "" {
		t.Errorf("owui's admin sees (-want +got):\n%s", d)
	}
	if _, r := get(t, a, "?group_by=principal&principal=owui/cy", "owui/ann", usageapi.OperatorRole); !cmp.Equal(principals(r), []string{"owui/cy"}) {
		t.Errorf("owui's admin, principal=owui/cy: %v", principals(r))
	}
	for _, p := range []string{"other/dee", "alice"} {
		if status, _ := get(t, a, "?principal="+p, "owui/ann", usageapi.OperatorRole); status != http.StatusForbidden {
			t.Errorf("owui's admin asking for %s: status %d, want 403", p, status)
		}
	}
	if _, r := get(t, a, "?group_by=principal", "ops/eve", usageapi.OperatorRole); len(r.Data) != 0 {
		t.Errorf("an admin behind a proxy key named ops sees %v, want only ops's principals (none)", principals(r))
	}
}

// TestUsageUserSeesOwn: a user's answer holds their own spend only, and
// naming another principal is refused.
func TestUsageUserSeesOwn(t *testing.T) {
	a := app(t)
	_, r := get(t, a, "?group_by=principal,model", "alice", "user")
	if d := cmp.Diff([]string{"alice"}, principals(r)); d != "" {
		t.Errorf("alice sees (-want +got):\n%s", d)
	}
	if r.Data[0].TokensIn != 2000 || r.Data[0].CostUSD != 0.006 {
		t.Errorf("alice's row = %+v", r.Data[0])
	}
	_, r = get(t, a, "", "carol", "user")
	if len(r.Data) != 1 || r.Data[0].Calls != 0 {
		t.Errorf("carol, who spent nothing, sees %+v", r.Data)
	}
	if status, _ := get(t, a, "?principal=bob", "alice", "user"); status != http.StatusForbidden {
		t.Errorf("alice asking for bob's: status %d, want 403", status)
	}
	if status, _ := get(t, a, "?group_by=cost", "alice", "user"); status != http.StatusBadRequest {
		t.Errorf("group_by=cost: status %d, want 400", status)
	}
	future := time.Now().AddDate(1, 0, 0).Format(time.DateOnly)
	if _, r := get(t, a, "?from="+future+"&to="+time.Now().AddDate(2, 0, 0).Format(time.DateOnly), "alice", "user"); r.Data[0].Calls != 0 {
		t.Errorf("a range after every call holds %+v", r.Data)
	}
}
