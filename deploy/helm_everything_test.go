// The chart with every value set: what each renders into, checked object
// by object.

package deploy_test

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/config"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
