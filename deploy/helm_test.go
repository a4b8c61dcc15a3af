package deploy_test

// The Helm chart (deploy/helm/longhaul), checked with Helm itself: helm is
// built from the module proxy at the version deploy/helm/tools/go.mod pins
// (a module of its own, so its dependencies stay out of Longhaul's
// go.mod), cached by that pin, then `helm lint --strict` and `helm
// template` run with the default values and with ci/all-values.yaml
// (everything on). Every manifest rendered is decoded strictly into the
// Kubernetes API types (k8s.io/api, the version go.mod already has): an
// unknown or misspelt field fails, as does a kind the test does not know.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/config"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/worker"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const (
	chartDir   = "helm/longhaul"
	allValues  = "helm/longhaul/ci/all-values.yaml"
	helmTools  = "helm/tools"
	helmPkg    = "helm.sh/helm/v3/cmd/helm"
	release    = "lh"
	releaseNS  = "agents"
	fullname   = "lh-longhaul"
	apiName    = fullname + "-api"
	workerName = fullname + "-worker"
	// kubeVersion is the cluster the chart is rendered and linted for
	// (its API versions and deprecations): a helm built with go build
	// says v1.20 otherwise, its default without the release's ldflags.
	kubeVersion = "1.33.0"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary builds helm once per test process into the user's cache
// directory, keyed by the tools module's go.mod and go.sum and the Go
// version, so a second run reuses it. A build that fails fails the test
// (with CI=true or not): the module proxy is what go itself needs.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		h := sha256.New()
		for _, f := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(helmTools, f))
			if err != nil {
				helmErr = err
				return
			}
			h.Write(b)
		}
		h.Write([]byte(runtime.Version()))
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "longhaul-test", "helm-"+hex.EncodeToString(h.Sum(nil))[:16])
		helmPath = filepath.Join(dir, "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			helmErr = err
			return
		}
		// Built beside its final name and renamed, so a concurrent test
		// process never runs a half-written binary.
		tmp := fmt.Sprintf("%s.%d.tmp", helmPath, os.Getpid())
		start := time.Now()
		cmd := exec.Command("go", "build", "-C", helmTools, "-trimpath", "-o", tmp, helmPkg)
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("go build %s (deploy/helm/tools): %v\n%s", helmPkg, err, out)
			return
		}
		if err := os.Rename(tmp, helmPath); err != nil {
			helmErr = err
			return
		}
		t.Logf("built helm in %s (cached at %s)", time.Since(start).Round(time.Second), helmPath)
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// helm runs the helm binary with an empty home of its own (no repository,
// plugin or cache of the machine's user) and returns its stdout.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmRun is helm, returning its failure (with its output) as an error.
func helmRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := helmBinary(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) the chart writes, with the field names of
// prometheus-operator pkg/apis/monitoring/v1/servicemonitor_types.go
// (ServiceMonitorSpec: endpoints, selector, namespaceSelector) and
// types.go (Endpoint: port, path, interval, scrapeTimeout;
// NamespaceSelector: any, matchNames). Decoded strictly, a field the chart
// writes that is not among these fails.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
	} `json:"spec"`
}

// rendered is what helm template wrote, decoded.
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	jobs         map[string]*batchv1.Job
	services     map[string]*corev1.Service
	ingresses    map[string]*networkingv1.Ingress
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	monitors     map[string]*serviceMonitor
	kinds        []string // every document's kind, in order
	manifestText string
}

// render runs helm lint --strict and helm template with the values files
// given, and decodes every manifest strictly.
func render(t *testing.T, valueFiles ...string) rendered {
	t.Helper()
	var vals []string
	for _, f := range valueFiles {
		vals = append(vals, "-f", f)
	}
	helm(t, append([]string{"lint", "--strict", chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}, vals...)...)
	out := helm(t, append([]string{"template", release, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}, vals...)...)
	r := rendered{
		deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		services: map[string]*corev1.Service{}, ingresses: map[string]*networkingv1.Ingress{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		policies: map[string]*networkingv1.NetworkPolicy{}, monitors: map[string]*serviceMonitor{},
		manifestText: out,
	}
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		strict := func(gv string, into any) string {
			t.Helper()
			if tm.APIVersion != gv {
				t.Errorf("%s is %s, want %s", tm.Kind, tm.APIVersion, gv)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s does not decode strictly into its API type: %v\n%s", tm.Kind, err, doc)
			}
			return reflect.ValueOf(into).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta).Name
		}
		r.kinds = append(r.kinds, tm.Kind)
		switch tm.Kind {
		case "Deployment":
			var o appsv1.Deployment
			r.deployments[strict("apps/v1", &o)] = &o
		case "Job":
			var o batchv1.Job
			r.jobs[strict("batch/v1", &o)] = &o
		case "Service":
			var o corev1.Service
			r.services[strict("v1", &o)] = &o
		case "Ingress":
			var o networkingv1.Ingress
			r.ingresses[strict("networking.k8s.io/v1", &o)] = &o
		case "HorizontalPodAutoscaler":
			var o autoscalingv2.HorizontalPodAutoscaler
			r.hpas[strict("autoscaling/v2", &o)] = &o
		case "PodDisruptionBudget":
			var o policyv1.PodDisruptionBudget
			r.pdbs[strict("policy/v1", &o)] = &o
		case "NetworkPolicy":
			var o networkingv1.NetworkPolicy
			r.policies[strict("networking.k8s.io/v1", &o)] = &o
		case "ServiceMonitor":
			var o serviceMonitor
			r.monitors[strict("monitoring.coreos.com/v1", &o)] = &o
		default:
			// A ConfigMap or Secret would be where values end up in
			// plain text: the chart renders neither.
			t.Errorf("the chart renders a %s %s, which this test does not know", tm.APIVersion, tm.Kind)
		}
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// settings are the environment variables internal/config reads: the
// envconfig tags of config.Config.
func settings() map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		if name := ct.Field(i).Tag.Get("envconfig"); name != "" {
			out[name] = ct.Field(i)
		}
	}
	return out
}

// secretSettings are the settings that carry a secret: those whose
// description says they are never logged, the keys, and the database URL
// (its password).
func secretSettings(t *testing.T) []string {
	t.Helper()
	out := []string{"LONGHAUL_API_KEYS", "LONGHAUL_PROXY_KEYS", "LONGHAUL_DATABASE_URL"}
	for name, f := range settings() {
		if strings.Contains(f.Tag.Get("desc"), "never logged") {
			out = append(out, name)
		}
	}
	// The ones this test knows the chart to carry, to see the list is read.
	for _, want := range []string{"LONGHAUL_LLM_API_KEY", "LONGHAUL_LLM_KEYS", "LONGHAUL_OPENWEBUI_JWT_SECRET", "LONGHAUL_TOKEN_KEY", "LONGHAUL_EMBED_API_KEY", "LONGHAUL_TEMPORAL_API_KEY"} {
		if !slices.Contains(out, want) {
			t.Fatalf("%s is no longer a never-logged setting of internal/config; the list of secrets is out of date", want)
		}
	}
	return out
}

// podSpecs are the pod templates of the Deployments and Jobs, by object.
func (r rendered) podSpecs() map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for n, d := range r.deployments {
		out["Deployment "+n] = d.Spec.Template
	}
	for n, j := range r.jobs {
		out["Job "+n] = j.Spec.Template
	}
	return out
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// checkCommon is what holds for any values: the objects, the settings
// each pod gets, secrets by reference, probes, security, versioning.
func checkCommon(t *testing.T, r rendered, tag string) {
	t.Helper()
	known := settings()
	secrets := secretSettings(t)
	for _, name := range []string{apiName, workerName} {
		if r.deployments[name] == nil {
			t.Fatalf("no Deployment %s; rendered %v", name, r.kinds)
		}
	}
	for obj, pod := range r.podSpecs() {
		ps := pod.Spec
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: the pod may run as root", obj)
		}
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token; Longhaul does not call the Kubernetes API", obj)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("%s has %d containers", obj, len(ps.Containers))
		}
		c := ps.Containers[0]
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: container security context %+v, want a read-only root filesystem and no privilege escalation", obj, sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v, want a CPU request and a memory limit", obj, c.Resources)
		}
		if want := ":" + tag; !strings.HasSuffix(c.Image, want) {
			t.Errorf("%s runs %s, want the tag %s", obj, c.Image, tag)
		}
		seen := map[string]bool{}
		for _, e := range c.Env {
			if seen[e.Name] {
				t.Errorf("%s sets %s twice", obj, e.Name)
			}
			seen[e.Name] = true
			if strings.HasPrefix(e.Name, config.Prefix+"_") {
				if _, ok := known[e.Name]; !ok {
					t.Errorf("%s sets %s, which internal/config does not read", obj, e.Name)
				}
			}
			if slices.Contains(secrets, e.Name) && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s: %s is a secret and must come from a secretKeyRef, got %+v", obj, e.Name, e)
			}
		}
		// Every file a setting names is in a mounted Secret.
		for _, e := range c.Env {
			if !strings.HasPrefix(e.Value, "/etc/longhaul/") {
				continue
			}
			mounted := false
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(e.Value, m.MountPath+"/") {
					mounted = true
				}
			}
			if !mounted {
				t.Errorf("%s: %s=%s is in no mounted volume", obj, e.Name, e.Value)
			}
		}
	}

	apiC := r.deployments[apiName].Spec.Template.Spec.Containers[0]
	workerC := r.deployments[workerName].Spec.Template.Spec.Containers[0]
	if got := strings.Join(apiC.Args, " "); got != "api" {
		t.Errorf("the API container runs longhaul %q", got)
	}
	if got := strings.Join(workerC.Args, " "); got != "worker" {
		t.Errorf("the worker container runs longhaul %q", got)
	}
	apiEnv, workerEnv := envOf(apiC), envOf(workerC)

	// The API listens on its named port on every interface; the metrics
	// listener is another port, on both (so the Ingress never serves
	// /metrics).
	port := func(c corev1.Container, name string) int32 {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
		t.Fatalf("container %s has no port %q", c.Name, name)
		return 0
	}
	if host, p, _ := net.SplitHostPort(apiEnv["LONGHAUL_HTTP_ADDR"].Value); host != "0.0.0.0" || p != strconv.Itoa(int(port(apiC, "http"))) {
		t.Errorf("LONGHAUL_HTTP_ADDR = %q, want 0.0.0.0 and the http port %d", apiEnv["LONGHAUL_HTTP_ADDR"].Value, port(apiC, "http"))
	}
	for _, c := range []corev1.Container{apiC, workerC} {
		if _, p, _ := net.SplitHostPort(envOf(c)["LONGHAUL_METRICS_ADDR"].Value); p != strconv.Itoa(int(port(c, "metrics"))) {
			t.Errorf("%s: LONGHAUL_METRICS_ADDR = %q, want the metrics port %d", c.Name, envOf(c)["LONGHAUL_METRICS_ADDR"].Value, port(c, "metrics"))
		}
	}
	if _, ok := workerEnv["LONGHAUL_HTTP_ADDR"]; ok {
		t.Error("the worker is given an API address")
	}
	for _, k := range []string{"LONGHAUL_API_KEYS", "LONGHAUL_PROXY_KEYS", "LONGHAUL_OPENWEBUI_JWT_SECRET"} {
		if _, ok := workerEnv[k]; ok {
			t.Errorf("the worker is given %s, which only the API needs", k)
		}
	}
	for _, k := range []string{"LONGHAUL_TEMPORAL_ADDRESS", "LONGHAUL_NATS_URL", "LONGHAUL_DATABASE_URL"} {
		if _, ok := apiEnv[k]; !ok {
			t.Errorf("the API has no %s (longhaul api needs it)", k)
		}
		if _, ok := workerEnv[k]; !ok {
			t.Errorf("the worker has no %s (longhaul worker needs it)", k)
		}
	}

	// Readiness on the route that stays up while workers are away (see
	// TestHelmReadinessRoute); liveness on a route of the process.
	rp := apiC.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != readinessPath(t) || rp.HTTPGet.Port.String() != "http" {
		t.Errorf("the API's readiness probe is %+v, want GET %s on port http", rp, readinessPath(t))
	}
	if lp := apiC.LivenessProbe; lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" {
		t.Errorf("the API's liveness probe is %+v, want GET /healthz", lp)
	}
	if lp := workerC.LivenessProbe; lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/metrics" || lp.HTTPGet.Port.String() != "metrics" {
		t.Errorf("the worker's liveness probe is %+v, want GET /metrics on port metrics (the worker serves nothing else)", lp)
	}

	// Worker versioning: the build id is the image tag.
	if got := workerEnv["LONGHAUL_WORKER_BUILD_ID"].Value; got != tag {
		t.Errorf("LONGHAUL_WORKER_BUILD_ID = %q, want the image tag %q", got, tag)
	}
	if workerEnv["LONGHAUL_WORKER_DEPLOYMENT"].Value == "" {
		t.Error("LONGHAUL_WORKER_DEPLOYMENT is not set")
	}
	// A stopping worker gets its drain time and a margin before SIGKILL.
	if g := r.deployments[workerName].Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= worker.DrainTimeout+5*time.Second {
		t.Errorf("the worker's terminationGracePeriodSeconds is %v, want more than worker.DrainTimeout (%v) and a margin", g, worker.DrainTimeout)
	}

	// The setup hook: before install and upgrade, replaced on the next
	// and deleted once it succeeded; it reaches Temporal and nothing else.
	setup := r.jobs[fullname+"-setup"]
	if setup == nil {
		t.Fatalf("no setup Job; rendered %v", r.kinds)
	}
	ann := setup.Annotations
	if hooks := strings.Split(ann["helm.sh/hook"], ","); !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
		t.Errorf("the setup Job's hooks are %q, want pre-install and pre-upgrade", ann["helm.sh/hook"])
	}
	if p := strings.Split(ann["helm.sh/hook-delete-policy"], ","); !slices.Contains(p, "before-hook-creation") || !slices.Contains(p, "hook-succeeded") {
		t.Errorf("the setup Job's hook-delete-policy is %q", ann["helm.sh/hook-delete-policy"])
	}
	sc := setup.Spec.Template.Spec.Containers[0]
	if strings.Join(sc.Args, " ") != "setup" || setup.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("the setup Job runs %v with restart policy %s", sc.Args, setup.Spec.Template.Spec.RestartPolicy)
	}
	setupEnv := envOf(sc)
	for name := range setupEnv {
		if !strings.HasPrefix(name, "LONGHAUL_TEMPORAL_") && name != "LONGHAUL_TASK_QUEUE" && name != "LONGHAUL_LOG_LEVEL" {
			t.Errorf("the setup Job is given %s; longhaul setup needs only Temporal's settings", name)
		}
	}
	if setupEnv["LONGHAUL_TEMPORAL_ADDRESS"] != apiEnv["LONGHAUL_TEMPORAL_ADDRESS"] || setupEnv["LONGHAUL_TEMPORAL_NAMESPACE"] != apiEnv["LONGHAUL_TEMPORAL_NAMESPACE"] {
		t.Errorf("setup registers in %v/%v, the API uses %v/%v", setupEnv["LONGHAUL_TEMPORAL_ADDRESS"], setupEnv["LONGHAUL_TEMPORAL_NAMESPACE"], apiEnv["LONGHAUL_TEMPORAL_ADDRESS"], apiEnv["LONGHAUL_TEMPORAL_NAMESPACE"])
	}
	// Its Secrets are the operator's: on install nothing of the chart
	// exists yet when the hook runs.
	for _, v := range setup.Spec.Template.Spec.Volumes {
		if v.Secret == nil {
			t.Errorf("the setup Job mounts %s, which is not an existing Secret", v.Name)
		}
	}

	// The API Service selects exactly the API pods, on their http port.
	svc := r.services[apiName]
	if svc == nil {
		t.Fatalf("no Service %s", apiName)
	}
	if !selects(svc.Spec.Selector, r.deployments[apiName].Spec.Template.Labels) || selects(svc.Spec.Selector, r.deployments[workerName].Spec.Template.Labels) {
		t.Errorf("Service %s selects %v", apiName, svc.Spec.Selector)
	}
	for _, d := range r.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s's selector %v does not select its own pods (%v)", d.Name, d.Spec.Selector, err)
		}
	}
}

func selects(sel map[string]string, podLabels map[string]string) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(podLabels))
}

// TestHelmChartDefaults: the chart with its own values lints strictly,
// renders the Deployments, Services and the setup hook, each decoding
// strictly, and nothing optional.
// keyedValues are the defaults plus the one value the chart requires of
// every install: where the API's keys are (issue 36 item 3).
const keyedValues = "helm/longhaul/ci/keys-values.yaml"

func TestHelmChartDefaults(t *testing.T) {
	t.Parallel()
	r := render(t, keyedValues)
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	checkCommon(t, r, chart.AppVersion)
	if n := len(r.ingresses) + len(r.hpas) + len(r.pdbs) + len(r.monitors); n != 0 {
		t.Errorf("the defaults render optional objects: %v", r.kinds)
	}
	// The network policies are on by default, the API's included (issue
	// 36 item 3): any pod of the cluster could otherwise read every
	// user's live tokens on NATS or act on the API.
	for _, name := range []string{"api", "temporal", "nats"} {
		if r.policies[fullname+"-"+name] == nil {
			t.Errorf("the defaults render no NetworkPolicy %s-%s; have %v", fullname, name, r.kinds)
		}
	}
	checkAPIPolicy(t, r, 0)
	for _, name := range []string{apiName, workerName} {
		if d := r.deployments[name]; d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("Deployment %s has %v replicas by default, want at least 2", name, d.Spec.Replicas)
		}
	}
	// No window by default: Longhaul asks the endpoint, and a window
	// larger than the endpoint's would be cut silently by Ollama.
	for _, name := range []string{apiName, workerName} {
		if e, ok := envOf(r.deployments[name].Spec.Template.Spec.Containers[0])["LONGHAUL_LLM_CONTEXT"]; ok {
			t.Errorf("Deployment %s sets LONGHAUL_LLM_CONTEXT %q by default", name, e.Value)
		}
	}
	if ref := envOf(r.deployments[apiName].Spec.Template.Spec.Containers[0])["LONGHAUL_DATABASE_URL"].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name == "" {
		t.Error("the default API has no database URL Secret")
	}
}

// TestHelmChartEverything: with every option on (ci/all-values.yaml),
// the chart lints and renders Ingress, HPAs, PDBs, the ServiceMonitor and
// the NetworkPolicies, each decoding strictly, wired to the right objects.
func TestHelmChartEverything(t *testing.T) {
	t.Parallel()
	r := render(t, allValues)
	checkCommon(t, r, "3f2c1ab")
	apiPod := r.deployments[apiName].Spec.Template
	workerPod := r.deployments[workerName].Spec.Template
	apiEnv, workerEnv := envOf(apiPod.Spec.Containers[0]), envOf(workerPod.Spec.Containers[0])

	// Every secret the values name reaches the pods by reference, under
	// the name and key the values give.
	wantRefs := map[string][2]string{
		"LONGHAUL_DATABASE_URL":         {"longhaul-db", "url"},
		"LONGHAUL_NATS_URL":             {"longhaul-nats", "nats-url"},
		"LONGHAUL_LLM_API_KEY":          {"longhaul-llm", "api-key"},
		"LONGHAUL_LLM_KEYS":             {"longhaul-llm", "endpoint-keys"},
		"LONGHAUL_EMBED_API_KEY":        {"longhaul-llm", "embed-key"},
		"LONGHAUL_TOKEN_KEY":            {"longhaul-auth", "token-key"},
		"LONGHAUL_TEMPORAL_API_KEY":     {"temporal-api-key", "api-key"},
		"LONGHAUL_API_KEYS":             {"longhaul-auth", "api-keys"},
		"LONGHAUL_PROXY_KEYS":           {"longhaul-auth", "proxy-keys"},
		"LONGHAUL_OPENWEBUI_JWT_SECRET": {"openwebui-jwt", "secret"},
	}
	for name, want := range wantRefs {
		e, ok := apiEnv[name]
		if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("the API's %s is %+v, want Secret %s key %s", name, e, want[0], want[1])
			continue
		}
		if got := [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}; got != want {
			t.Errorf("the API's %s comes from %v, want %v", name, got, want)
		}
	}
	for _, s := range []string{"longhaul-db", "longhaul-llm", "longhaul-auth", "openwebui-jwt", "temporal-api-key"} {
		// A Secret's name may appear in references; no rendered object
		// holds a secret's value (the values hold none to leak).
		if !strings.Contains(r.manifestText, "name: \""+s+"\"") {
			t.Errorf("Secret %s is referenced nowhere", s)
		}
	}
	if e := workerEnv["LONGHAUL_WORKER_VERSIONING"].Value; e != config.VersioningPinned {
		t.Errorf("LONGHAUL_WORKER_VERSIONING = %q, want the values' pinned", e)
	}
	if e := workerEnv["LONGHAUL_WORKER_PROMOTE"].Value; e != "false" {
		t.Errorf("LONGHAUL_WORKER_PROMOTE = %q, want false", e)
	}
	// The values' windows reach the API and the workers, which count
	// every model call against them.
	for _, e := range []map[string]corev1.EnvVar{apiEnv, workerEnv} {
		if got := e["LONGHAUL_LLM_CONTEXT"].Value; got != "gpt-4o-mini=128000,remote:llama3.1:8b=16384" {
			t.Errorf("LONGHAUL_LLM_CONTEXT = %q, want the values' windows", got)
		}
	}
	if apiEnv["LONGHAUL_MAX_STREAMS"].Value != "100" || workerEnv["LONGHAUL_WORKER_ACTIVITY_SLOTS"].Value != "2000" || apiEnv["LONGHAUL_MAX_RUNS"].Value != "50" || workerEnv["LONGHAUL_MAX_RUNS"].Value != "50" {
		t.Error("the values' env settings are not where they belong")
	}
	for _, k := range []string{"LONGHAUL_TEMPORAL_TLS_CA", "LONGHAUL_TEMPORAL_TLS_CERT", "LONGHAUL_TEMPORAL_TLS_KEY", "LONGHAUL_NATS_TLS_CA", "LONGHAUL_NATS_TLS_CERT", "LONGHAUL_NATS_TLS_KEY", "LONGHAUL_NATS_CREDS"} {
		if apiEnv[k].Value == "" || workerEnv[k].Value == "" {
			t.Errorf("%s is not set on both API and worker", k)
		}
	}

	// Replicas belong to the HPAs, which scale the Deployments.
	for _, name := range []string{apiName, workerName} {
		if r.deployments[name].Spec.Replicas != nil {
			t.Errorf("Deployment %s sets replicas while an HPA scales it", name)
		}
		h := r.hpas[name]
		if h == nil {
			t.Errorf("no HPA %s", name)
			continue
		}
		if ref := h.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || r.deployments[ref.Name] == nil {
			t.Errorf("HPA %s scales %+v", name, ref)
		}
		if len(h.Spec.Metrics) == 0 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
			t.Errorf("HPA %s has metrics %+v, want CPU utilisation", name, h.Spec.Metrics)
		}
	}
	if h := r.hpas[workerName]; h != nil && (h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != 3 || h.Spec.MaxReplicas != 20) {
		t.Errorf("the worker HPA's bounds are %v..%d, want the values' 3..20", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}

	// A PDB for each, selecting its pods and no other.
	for name, pod := range map[string]corev1.PodTemplateSpec{apiName: apiPod, workerName: workerPod} {
		p := r.pdbs[name]
		if p == nil {
			t.Errorf("no PDB %s", name)
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			t.Errorf("PDB %s does not select its pods", name)
		}
		other := apiPod
		if name == apiName {
			other = workerPod
		}
		if sel.Matches(labels.Set(other.Labels)) {
			t.Errorf("PDB %s also selects the other component's pods", name)
		}
	}

	// The Ingress: the SSE settings, to the API Service's http port.
	ing := r.ingresses[apiName]
	if ing == nil {
		t.Fatalf("no Ingress; rendered %v", r.kinds)
	}
	wantAnn := map[string]string{
		"nginx.ingress.kubernetes.io/proxy-buffering":    "off",
		"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
		"nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
		"nginx.ingress.kubernetes.io/proxy-body-size":    "10m",
	}
	for k, v := range wantAnn {
		if got := ing.Annotations[k]; got != v {
			t.Errorf("Ingress annotation %s = %q, want %q", k, got, v)
		}
	}
	if n, _ := strconv.Atoi(ing.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]); time.Duration(n)*time.Second < 10*time.Minute {
		t.Errorf("proxy-read-timeout %ds is shorter than LONGHAUL_REQUEST_TIMEOUT's default 10m", n)
	}
	if len(ing.Spec.TLS) != 1 || ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("Ingress TLS %v, class %v", ing.Spec.TLS, ing.Spec.IngressClassName)
	}
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != apiName || b.Port.Name != "http" {
				t.Errorf("Ingress path %s goes to %+v, want %s port http", p.Path, b, apiName)
			}
		}
	}
	svcPorts := map[string]bool{}
	for _, p := range r.services[apiName].Spec.Ports {
		svcPorts[p.Name] = true
		if p.Name == "http" && p.TargetPort.String() != "http" {
			t.Errorf("the API Service's http port targets %s", p.TargetPort.String())
		}
	}
	if !svcPorts["http"] {
		t.Error("the API Service has no http port")
	}

	// The ServiceMonitor finds both components' metrics ports.
	sm := r.monitors[fullname]
	if sm == nil {
		t.Fatalf("no ServiceMonitor; rendered %v", r.kinds)
	}
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v, want the values' release label", sm.Labels)
	}
	smSel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
	scraped := map[string]bool{}
	for _, s := range r.services {
		if !smSel.Matches(labels.Set(s.Labels)) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.Name != "metrics" {
				continue
			}
			for _, d := range r.deployments {
				if selects(s.Spec.Selector, d.Spec.Template.Labels) {
					scraped[d.Name] = true
				}
			}
		}
	}
	if !scraped[apiName] || !scraped[workerName] {
		t.Errorf("the ServiceMonitor scrapes %v, want the API and the workers", scraped)
	}

	checkAPIPolicy(t, r, 1)
	// The NetworkPolicies: Temporal's and NATS's pods take connections
	// from their own and from this release's api, worker and setup pods
	// (across namespaces when they live elsewhere), and the extra peers.
	longhaulPods := map[string]map[string]string{"api": apiPod.Labels, "worker": workerPod.Labels, "setup": r.jobs[fullname+"-setup"].Spec.Template.Labels}
	for name, ns := range map[string]string{"temporal": "temporal", "nats": releaseNS} {
		p := r.policies[fullname+"-"+name]
		if p == nil {
			t.Errorf("no NetworkPolicy for %s", name)
			continue
		}
		if p.Namespace != ns {
			t.Errorf("NetworkPolicy %s is in namespace %q, want %q", p.Name, p.Namespace, ns)
		}
		if !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(p.Spec.Ingress) != 1 {
			t.Fatalf("NetworkPolicy %s: types %v, %d ingress rules", p.Name, p.Spec.PolicyTypes, len(p.Spec.Ingress))
		}
		target, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || target.Empty() {
			t.Fatalf("NetworkPolicy %s selects every pod of its namespace (%v)", p.Name, err)
		}
		from := p.Spec.Ingress[0].From
		for comp, l := range longhaulPods {
			ok := false
			for _, peer := range from {
				if peer.PodSelector == nil {
					continue
				}
				s, _ := metav1.LabelSelectorAsSelector(peer.PodSelector)
				if !s.Matches(labels.Set(l)) {
					continue
				}
				switch {
				case ns == releaseNS && peer.NamespaceSelector == nil:
					ok = true
				case ns != releaseNS && peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == releaseNS:
					ok = true
				}
			}
			if !ok {
				t.Errorf("NetworkPolicy %s keeps out the %s pods", p.Name, comp)
			}
		}
		// Its own pods still reach each other (a cluster's own traffic).
		own := false
		for _, peer := range from {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil && reflect.DeepEqual(peer.PodSelector.MatchLabels, p.Spec.PodSelector.MatchLabels) {
				own = true
			}
		}
		if !own {
			t.Errorf("NetworkPolicy %s cuts %s's pods off from each other", p.Name, name)
		}
		if name == "temporal" && len(from) != 3 {
			t.Errorf("NetworkPolicy %s has %d peers, want its own, Longhaul's and the values' extra one", p.Name, len(from))
		}
	}
}

// checkAPIPolicy checks that the API's NetworkPolicy selects the API's
// pods (and no other Deployment's), and admits this namespace's pods and
// extra other peers, nothing else.
func checkAPIPolicy(t *testing.T, r rendered, extra int) {
	t.Helper()
	p := r.policies[fullname+"-api"]
	if p == nil {
		t.Fatalf("no NetworkPolicy for the API")
	}
	if p.Namespace != releaseNS {
		t.Errorf("the API's NetworkPolicy is in namespace %q, want %q", p.Namespace, releaseNS)
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil || sel.Empty() {
		t.Fatalf("the API's NetworkPolicy selects every pod of its namespace (%v)", err)
	}
	for name, d := range r.deployments {
		if got := sel.Matches(labels.Set(d.Spec.Template.Labels)); got != (name == apiName) {
			t.Errorf("the API's NetworkPolicy selects Deployment %s: %v", name, got)
		}
	}
	if !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(p.Spec.Ingress) != 1 {
		t.Fatalf("the API's NetworkPolicy: types %v, %d ingress rules", p.Spec.PolicyTypes, len(p.Spec.Ingress))
	}
	from := p.Spec.Ingress[0].From
	if len(from) != 1+extra {
		t.Fatalf("the API's NetworkPolicy admits %d peers, want this namespace's pods and %d more", len(from), extra)
	}
	if ns := from[0]; ns.PodSelector == nil || len(ns.PodSelector.MatchLabels)+len(ns.PodSelector.MatchExpressions) != 0 || ns.NamespaceSelector != nil || ns.IPBlock != nil {
		t.Errorf("the API's NetworkPolicy's first peer is %+v, want every pod of this namespace alone", ns)
	}
}

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
		// and trust anyone's user headers (issue 36 item 3).
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
