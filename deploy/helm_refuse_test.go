// What the chart refuses to render (open configurations, missing
// secrets) and the readiness route it probes.

package deploy_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestHelmChartRefuses: values that would deploy something broken or
// open stop helm template with a message naming the value.
func TestHelmChartRefuses(t *testing.T) {
	t.Parallel()
	const keyed = "auth.apiKeys.existingSecret=longhaul-auth"
	for _, c := range []struct {
		set  []string
		want string
	}{
		// No keys at all (the defaults): the API would serve every caller
		// and trust anyone's user headers.
		{nil, "auth.allowAnonymous=true"},
		{nil, "auth.apiKeys.existingSecret"},
		// An Ingress or a published Service in front of an API with no
		// keys: anyone on the Internet could read every user's runs;
		// allowAnonymous does not cover them.
		{[]string{"ingress.enabled=true", "auth.allowAnonymous=true"}, "auth.apiKeys"},
		{[]string{"api.service.type=LoadBalancer"}, "api.service.type=LoadBalancer"},
		{[]string{"api.service.type=LoadBalancer", "auth.allowAnonymous=true"}, "auth.apiKeys.existingSecret"},
		{[]string{"api.service.type=NodePort", "auth.allowAnonymous=true"}, "api.service.type=NodePort"},
		// A NATS credential in plain values.
		{[]string{keyed, "nats.url=nats://s3cret@nats:4222"}, "nats.urlSecret.existingSecret"},
		{[]string{keyed, "database.existingSecret="}, "database.existingSecret"},
		{[]string{keyed, "temporal.address="}, "temporal.address"},
		{[]string{keyed, "nats.url="}, "nats.url"},
		// values.schema.json: a misspelt value, a setting that is not
		// Longhaul's, a versioning behaviour internal/config refuses.
		{[]string{keyed, "imag.tag=x"}, "'imag' not allowed"},
		{[]string{keyed, "env.HTTP_ADDR=0.0.0.0:80"}, "HTTP_ADDR"},
		{[]string{keyed, "worker.versioning=sticky"}, "auto-upgrade"},
		// A window that is not model=tokens,….
		{[]string{keyed, "llm.context=16384"}, "llm.context"},
	} {
		args := []string{"template", release, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		_, err := helmRun(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("helm template --set %v: %v, want a failure naming %s", c.set, err, c.want)
		}
	}
	// With keys, the same Ingress and LoadBalancer render; without them,
	// an explicit allowAnonymous renders a ClusterIP API, with a warning,
	// and so does a NATS URL from a Secret.
	for _, set := range [][]string{
		{"ingress.enabled=true", "auth.proxyKeys.existingSecret=longhaul-auth"},
		{"api.service.type=LoadBalancer", keyed},
		{"auth.allowAnonymous=true"},
		{keyed, "nats.url=nats://s3cret@nats:4222", "nats.urlSecret.existingSecret=nats-url"},
	} {
		args := []string{"template", release, chartDir, "--kube-version", kubeVersion}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if _, err := helmRun(t, args...); err != nil {
			t.Error(err)
		}
	}
	// helm lint renders NOTES.txt (with its warnings for these values)
	// too; helm install --dry-run, which prints it, cannot be told the
	// cluster's version.
	if _, err := helmRun(t, "lint", "--strict", chartDir, "--kube-version", kubeVersion, "--set", "auth.allowAnonymous=true"); err != nil {
		t.Error(err)
	}
}

// readinessPath is the route the chart's values give the API's readiness
// probe.
func readinessPath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		API struct {
			ReadinessProbe corev1.Probe `json:"readinessProbe"`
		} `json:"api"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.API.ReadinessProbe.HTTPGet == nil {
		t.Fatal("values.yaml: api.readinessProbe is not an httpGet probe")
	}
	return v.API.ReadinessProbe.HTTPGet.Path
}

// TestHelmReadinessRoute: the route of the API's readiness probe answers
// 200 while Temporal is up and no worker polls, the moment of a workers'
// rollout or crash, when /readyz answers 503 (api/server.go, readyz). A
// readiness probe on /readyz would take every API pod out of its Service
// at once, streams and all; the chosen one does not.
func TestHelmReadinessRoute(t *testing.T) {
	t.Parallel()
	path := readinessPath(t)
	env := testenv.Start(t, testenv.Options{NoWorker: true, API: api.Config{}})
	get := func(p string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with no worker = %d, want 503 (the test's premise)", got)
	}
	if got := get(path); got != http.StatusOK {
		t.Errorf("the readiness probe's %s with no worker = %d, want 200", path, got)
	}
}
