{{/* The chart's name. */}}
{{- define "longhaul.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, the prefix of every object's name. */}}
{{- define "longhaul.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The image tag, and so the workers' build id. */}}
{{- define "longhaul.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/* Selector labels of every pod of the release (component apart). */}}
{{- define "longhaul.selectorLabels" -}}
app.kubernetes.io/name: {{ include "longhaul.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object; dict "ctx" $ "component" name. */}}
{{- define "longhaul.labels" -}}
{{ include "longhaul.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/version: {{ include "longhaul.tag" .ctx | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: longhaul
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* Selector of one component's pods; dict "ctx" $ "component" name. */}}
{{- define "longhaul.componentSelector" -}}
{{ include "longhaul.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* One env entry from a Secret; dict "name" ENV "ref" {existingSecret, key}. */}}
{{- define "longhaul.secretEnv" -}}
{{- if .ref.existingSecret }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .ref.existingSecret | quote }}
      key: {{ required (printf "the key of %s's Secret" .name) .ref.key | quote }}
{{- end }}
{{- end -}}

{{/* One env entry with a plain value, skipped when the value is empty. */}}
{{- define "longhaul.plainEnv" -}}
{{- if ne (toString .value) "" }}
- name: {{ .name }}
  value: {{ toString .value | quote }}
{{- end }}
{{- end -}}

{{/*
What every Longhaul pod needs to reach Temporal: address, namespace, task
queue, TLS and API key. The setup Job has only this.
*/}}
{{- define "longhaul.temporalEnv" -}}
{{- $v := .Values -}}
- name: LONGHAUL_TEMPORAL_ADDRESS
  value: {{ required "temporal.address (host:port of the Temporal frontend)" $v.temporal.address | quote }}
- name: LONGHAUL_TEMPORAL_NAMESPACE
  value: {{ $v.temporal.namespace | quote }}
- name: LONGHAUL_TASK_QUEUE
  value: {{ $v.temporal.taskQueue | quote }}
- name: LONGHAUL_LOG_LEVEL
  value: {{ $v.logLevel | quote }}
{{- with $v.temporal.tls }}
{{- if .enabled }}
- name: LONGHAUL_TEMPORAL_TLS
  value: "true"
{{- end }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_TEMPORAL_TLS_SERVER_NAME" "value" .serverName) }}
{{- if .existingSecret }}
{{- if .caKey }}
- name: LONGHAUL_TEMPORAL_TLS_CA
  value: {{ printf "/etc/longhaul/temporal-tls/%s" .caKey | quote }}
{{- end }}
{{- if and .certKey .keyKey }}
- name: LONGHAUL_TEMPORAL_TLS_CERT
  value: {{ printf "/etc/longhaul/temporal-tls/%s" .certKey | quote }}
- name: LONGHAUL_TEMPORAL_TLS_KEY
  value: {{ printf "/etc/longhaul/temporal-tls/%s" .keyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_TEMPORAL_API_KEY" "ref" $v.temporal.apiKey) }}
{{- end -}}

{{/*
What the API and the workers both need beyond Temporal: NATS, the store,
the model endpoints, metrics, the token key, the operator's extra env.
*/}}
{{- define "longhaul.commonEnv" -}}
{{- $v := .Values -}}
{{ include "longhaul.temporalEnv" . }}
{{- if $v.nats.urlSecret.existingSecret }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_NATS_URL" "ref" $v.nats.urlSecret) }}
{{- else }}
- name: LONGHAUL_NATS_URL
  value: {{ required "nats.url (or nats.urlSecret)" $v.nats.url | quote }}
{{- end }}
- name: LONGHAUL_NATS_SUBJECT_PREFIX
  value: {{ $v.nats.subjectPrefix | quote }}
{{- if $v.nats.creds.existingSecret }}
- name: LONGHAUL_NATS_CREDS
  value: {{ printf "/etc/longhaul/nats-creds/%s" $v.nats.creds.key | quote }}
{{- end }}
{{- with $v.nats.tls }}
{{- if .existingSecret }}
{{- if .caKey }}
- name: LONGHAUL_NATS_TLS_CA
  value: {{ printf "/etc/longhaul/nats-tls/%s" .caKey | quote }}
{{- end }}
{{- if and .certKey .keyKey }}
- name: LONGHAUL_NATS_TLS_CERT
  value: {{ printf "/etc/longhaul/nats-tls/%s" .certKey | quote }}
- name: LONGHAUL_NATS_TLS_KEY
  value: {{ printf "/etc/longhaul/nats-tls/%s" .keyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_DATABASE_URL" "ref" (dict "existingSecret" (required "database.existingSecret (a Secret holding the postgres:// URL)" $v.database.existingSecret) "key" $v.database.key)) }}
- name: LONGHAUL_LLM_BASE_URL
  value: {{ $v.llm.baseURL | quote }}
- name: LONGHAUL_LLM_MODEL
  value: {{ $v.llm.model | quote }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_LLM_CONTEXT" "value" $v.llm.context) }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_LLM_ENDPOINTS" "value" $v.llm.endpoints) }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_LLM_API_KEY" "ref" $v.llm.apiKey) }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_LLM_KEYS" "ref" $v.llm.keys) }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_EMBED_MODEL" "value" $v.llm.embedModel) }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_EMBED_BASE_URL" "value" $v.llm.embedBaseURL) }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_EMBED_API_KEY" "ref" $v.llm.embedAPIKey) }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_TOKEN_KEY" "ref" $v.auth.tokenKey) }}
{{- include "longhaul.plainEnv" (dict "name" "LONGHAUL_PUBLIC_URL" "value" $v.auth.publicURL) }}
- name: LONGHAUL_METRICS_ADDR
  value: {{ printf "0.0.0.0:%d" (int $v.metrics.port) | quote }}
{{- range $name, $value := $v.env }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes of the Secrets mounted as files (TLS, NATS credentials). */}}
{{- define "longhaul.secretVolumes" -}}
{{- $v := .Values -}}
{{- if $v.temporal.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ $v.temporal.tls.existingSecret | quote }}
{{- end }}
{{- if not .temporalOnly }}
{{- if $v.nats.tls.existingSecret }}
- name: nats-tls
  secret:
    secretName: {{ $v.nats.tls.existingSecret | quote }}
{{- end }}
{{- if $v.nats.creds.existingSecret }}
- name: nats-creds
  secret:
    secretName: {{ $v.nats.creds.existingSecret | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "longhaul.secretMounts" -}}
{{- $v := .Values -}}
{{- if $v.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: /etc/longhaul/temporal-tls
  readOnly: true
{{- end }}
{{- if not .temporalOnly }}
{{- if $v.nats.tls.existingSecret }}
- name: nats-tls
  mountPath: /etc/longhaul/nats-tls
  readOnly: true
{{- end }}
{{- if $v.nats.creds.existingSecret }}
- name: nats-creds
  mountPath: /etc/longhaul/nats-creds
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}

{{/* The pod spec's common part: account, security, pull secrets. */}}
{{- define "longhaul.podCommon" -}}
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{- define "longhaul.image" -}}
{{ printf "%s:%s" .Values.image.repository (include "longhaul.tag" .) | quote }}
{{- end -}}

{{/* The keys: who may call the API, and whom a worker resolves a
schedule's owner against at each fire. */}}
{{- define "longhaul.keysEnv" -}}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_API_KEYS" "ref" .Values.auth.apiKeys) }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_PROXY_KEYS" "ref" .Values.auth.proxyKeys) }}
{{- end -}}

{{/* The API's own Secrets: who may call it. */}}
{{- define "longhaul.apiSecretEnv" -}}
{{- include "longhaul.keysEnv" . }}
{{- include "longhaul.secretEnv" (dict "name" "LONGHAUL_OPENWEBUI_JWT_SECRET" "ref" .Values.auth.openWebUIJWTSecret) }}
{{- end -}}

{{/*
What the chart refuses to render, each failure saying what to set: an API
with neither API nor proxy keys (unless auth.allowAnonymous), a published
one (LoadBalancer, NodePort) without keys at all, a credential in the
plain nats.url.
*/}}
{{- define "longhaul.guards" -}}
{{- $v := .Values -}}
{{- if not (or $v.auth.apiKeys.existingSecret $v.auth.proxyKeys.existingSecret) -}}
{{- if has $v.api.service.type (list "LoadBalancer" "NodePort") -}}
{{- fail (printf "api.service.type=%s publishes the API outside the cluster, and with no auth.apiKeys and no auth.proxyKeys it serves every caller and trusts anyone's user headers: set auth.apiKeys.existingSecret or auth.proxyKeys.existingSecret (auth.allowAnonymous does not cover a published API)" $v.api.service.type) -}}
{{- end -}}
{{- if not $v.auth.allowAnonymous -}}
{{- fail "no API keys: set auth.apiKeys.existingSecret (LONGHAUL_API_KEYS) or auth.proxyKeys.existingSecret (LONGHAUL_PROXY_KEYS, Open WebUI's connection); without keys the API serves every caller and trusts anyone's user headers. Only for a development install, set auth.allowAnonymous=true" -}}
{{- end -}}
{{- end -}}
{{- if and (not $v.nats.urlSecret.existingSecret) (contains "@" (toString $v.nats.url)) -}}
{{- fail "nats.url carries a credential, and values are not secret: put the URL in a Secret (nats.urlSecret.existingSecret) or use a credentials file (nats.creds.existingSecret)" -}}
{{- end -}}
{{- end -}}
