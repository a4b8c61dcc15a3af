package runs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/temporalio/sqlparser"
	"go.temporal.io/server/common/sqlquery"
)

// FuzzPrincipalQuery names a principal after any user id, the way
// identity.Resolve does (on an open server and behind a proxy key), builds
// the visibility queries of its runs (the listing and the count of its
// limit) and reads them back the way Temporal's SQL visibility does
// (go.temporal.io/server@v1.32.1): parsed by its sqlparser
// (common/persistence/visibility/store/query/converter.go:238-247), each
// string value put between quotes and read by sqlquery.ParseValue
// (converter.go:612-618). The principal's comparison must be there once,
// under AND only, with the principal's name whole, and that name must hold
// nothing the SQL store escapes MySQL's way (see LiteralOK).
func FuzzPrincipalQuery(f *testing.F) {
	for _, s := range []string{"ann", "o'brien", "' OR LonghaulUser != '", "x' OR LonghaulUser != '", "bob'", "'bob", "''", `a\'b`, `say "hi"`, "m/x", "a\nb", "~", strings.Repeat("'", 90)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		for _, principal := range []string{identity.Bounded(id), "owui/" + identity.Bounded(id)} {
			if !LiteralOK(principal) {
				t.Fatalf("user %q becomes principal %q, which no query can match", id, principal)
			}
			for _, q := range []string{
				Filter{Owner: principal}.Query(), Filter{Owner: principal, Agent: "naked", Status: contract.StatusFailed}.Query(),
				Filter{Owner: principal, Running: true}.Query(), Filter{Owner: principal, Chat: principal + "/c", Status: contract.StatusWaiting}.Query(),
			} {
				got, err := temporalUserValues(q)
				if err != nil {
					t.Fatalf("query %q: %v", q, err)
				}
				if len(got) != 1 || got[0] != principal {
					t.Fatalf("query %q matches %s = %q, want %q", q, contract.SearchAttrUser.GetName(), got, principal)
				}
			}
		}
	})
}

// temporalUserValues parses a visibility query as Temporal's SQL visibility
// does and returns the values its LonghaulUser comparisons hold; it fails
// when the query is not a conjunction of comparisons.
func temporalUserValues(q string) ([]string, error) {
	stmt, err := sqlparser.Parse("select * from table1 where " + q)
	if err != nil {
		return nil, err
	}
	var values []string
	var walk func(e sqlparser.Expr) error
	walk = func(e sqlparser.Expr) error {
		switch e := e.(type) {
		case *sqlparser.AndExpr:
			if err := walk(e.Left); err != nil {
				return err
			}
			return walk(e.Right)
		case *sqlparser.ParenExpr:
			return walk(e.Expr)
		case *sqlparser.OrExpr:
			// Only the listing's failed filter is a disjunction, of fixed
			// statuses.
			if strings.Contains(sqlparser.String(e), contract.SearchAttrUser.GetName()) {
				return fmt.Errorf("the user is compared under OR: %s", sqlparser.String(e))
			}
			return nil
		case *sqlparser.ComparisonExpr:
			col, ok := e.Left.(*sqlparser.ColName)
			if !ok {
				return fmt.Errorf("comparison of %s", sqlparser.String(e.Left))
			}
			if col.Name.String() != contract.SearchAttrUser.GetName() {
				return nil
			}
			val, ok := e.Right.(*sqlparser.SQLVal)
			if !ok || val.Type != sqlparser.StrVal || e.Operator != sqlparser.EqualStr {
				return fmt.Errorf("user comparison %s", sqlparser.String(e))
			}
			v, err := sqlquery.ParseValue(fmt.Sprintf(`'%s'`, val.Val))
			if err != nil {
				return err
			}
			s, _ := v.(string)
			values = append(values, s)
			return nil
		default:
			return fmt.Errorf("unexpected %T: %s", e, sqlparser.String(e))
		}
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || sel.Where == nil {
		return nil, fmt.Errorf("not a select with a where: %s", sqlparser.String(stmt))
	}
	return values, walk(sel.Where.Expr)
}
