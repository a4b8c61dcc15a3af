package bench

import (
	"net/http"
	"time"
)

// httpClient is the benchmarks' HTTP client. Its transport keeps a
// connection per stream open, with no limit per host, so a thousand
// concurrent streams each get one.
var httpClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        2048,
	MaxIdleConnsPerHost: 2048,
	IdleConnTimeout:     time.Minute,
	DisableCompression:  true,
}}
