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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
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

	"github.com/longhaul-dev/longhaul/internal/config"
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
		r.kinds = append(r.kinds, tm.Kind)
		switch tm.Kind {
		case "Deployment":
			decodeInto(t, r.deployments, tm, doc, "apps/v1")
		case "Job":
			decodeInto(t, r.jobs, tm, doc, "batch/v1")
		case "Service":
			decodeInto(t, r.services, tm, doc, "v1")
		case "Ingress":
			decodeInto(t, r.ingresses, tm, doc, "networking.k8s.io/v1")
		case "HorizontalPodAutoscaler":
			decodeInto(t, r.hpas, tm, doc, "autoscaling/v2")
		case "PodDisruptionBudget":
			decodeInto(t, r.pdbs, tm, doc, "policy/v1")
		case "NetworkPolicy":
			decodeInto(t, r.policies, tm, doc, "networking.k8s.io/v1")
		case "ServiceMonitor":
			decodeInto(t, r.monitors, tm, doc, "monitoring.coreos.com/v1")
		default:
			// A ConfigMap or Secret would be where values end up in
			// plain text: the chart renders neither.
			t.Errorf("the chart renders a %s %s, which this test does not know", tm.APIVersion, tm.Kind)
		}
	}
	return r
}

// decodeInto decodes one rendered document strictly into its API type and
// files it by name: a field the type does not have fails the test, as
// the API server would refuse it.
func decodeInto[T any](t *testing.T, by map[string]*T, tm metav1.TypeMeta, doc, apiVersion string) {
	t.Helper()
	if tm.APIVersion != apiVersion {
		t.Errorf("%s is %s, want %s", tm.Kind, tm.APIVersion, apiVersion)
	}
	o := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), o); err != nil {
		t.Fatalf("%s does not decode strictly into its API type: %v\n%s", tm.Kind, err, doc)
	}
	by[reflect.ValueOf(o).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta).Name] = o
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
	// The worker resolves a schedule's owner against the API's keys at
	// each fire (a removed key's schedules stop), so it has them; the
	// Open WebUI JWT secret stays the API's alone.
	for _, k := range []string{"LONGHAUL_API_KEYS", "LONGHAUL_PROXY_KEYS"} {
		if apiEnv[k].ValueFrom != nil && !reflect.DeepEqual(workerEnv[k].ValueFrom, apiEnv[k].ValueFrom) {
			t.Errorf("the worker's %s is %+v, not the API's %+v", k, workerEnv[k].ValueFrom, apiEnv[k].ValueFrom)
		}
	}
	for _, k := range []string{"LONGHAUL_OPENWEBUI_JWT_SECRET"} {
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
// every install: where the API's keys are, since an API without keys
// serves anyone.
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
