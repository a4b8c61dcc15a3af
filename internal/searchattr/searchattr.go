// Package searchattr registers the custom search attributes a namespace
// needs, once and idempotently: the embedded dev server does it at each
// start, `longhaul setup` against a real cluster.
package searchattr

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"
)

// Operator is the part of Temporal's operator service Ensure uses;
// client.Client's OperatorService() is one.
type Operator interface {
	ListSearchAttributes(ctx context.Context, in *operatorservice.ListSearchAttributesRequest, opts ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error)
	AddSearchAttributes(ctx context.Context, in *operatorservice.AddSearchAttributesRequest, opts ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error)
}

// Ensure registers in namespace ns the attributes of want it lacks and
// returns their names, sorted; none when all are there. An attribute that
// exists with another type is an error naming it and both types: runs
// could not be listed by it, and Temporal cannot change a type in place.
func Ensure(ctx context.Context, op Operator, ns string, want map[string]enumspb.IndexedValueType) ([]string, error) {
	if len(want) == 0 {
		return nil, nil
	}
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %q: %w", ns, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	var wrong []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		typ, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = want[name]
		case typ != want[name]:
			wrong = append(wrong, fmt.Sprintf("%s is %s, Longhaul needs %s", name, typ.String(), want[name].String()))
		}
	}
	if len(wrong) > 0 {
		return nil, fmt.Errorf("namespace %q has search attributes of the wrong type (%s); remove them (temporal operator search-attribute remove) and run again", ns, strings.Join(wrong, "; "))
	}
	if len(missing) == 0 {
		return nil, nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return nil, fmt.Errorf("add search attributes to namespace %q: %w", ns, err)
	}
	return slices.Sorted(maps.Keys(missing)), nil
}
