package tools_test

import (
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/tools"
)

func ExampleExpandEnv() {
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"MEDIA_SERVER_URL": "http://media.lan"}[name]
		return v, ok
	}
	url, err := tools.ExpandEnv("${MEDIA_SERVER_URL}/api/v1/request", lookup)
	fmt.Println(url, err)
	_, err = tools.ExpandEnv("${MEDIA_SERVER_KEY}", lookup)
	fmt.Println(err)
	// Output:
	// http://media.lan/api/v1/request <nil>
	// environment variable "MEDIA_SERVER_KEY" is not set
}
