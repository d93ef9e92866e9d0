{{/* vim: set filetype=mustache: */}}

{{/* The chart name, or nameOverride. */}}
{{- define "memhub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The resource name prefix: <release>-memhub, or the release name when it already contains the chart name. */}}
{{- define "memhub.fullname" -}}
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

{{- define "memhub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "memhub.labels" -}}
helm.sh/chart: {{ include "memhub.chart" . }}
app.kubernetes.io/name: {{ include "memhub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: memhub
{{- end -}}

{{/* Selector labels of the hub. */}}
{{- define "memhub.hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memhub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end -}}

{{- define "memhub.hub.fullname" -}}
{{- printf "%s-hub" (include "memhub.fullname" . | trunc 59 | trimSuffix "-") -}}
{{- end -}}

{{- define "memhub.policies.configMapName" -}}
{{- if .Values.policies.existingConfigMap -}}
{{- .Values.policies.existingConfigMap -}}
{{- else -}}
{{- printf "%s-policies" (include "memhub.fullname" . | trunc 54 | trimSuffix "-") -}}
{{- end -}}
{{- end -}}

{{/* Name of a bridge's objects; call with (dict "root" $ "name" $bridge.name). */}}
{{- define "memhub.bridge.fullname" -}}
{{- printf "%s-bridge-%s" (include "memhub.fullname" .root | trunc 32 | trimSuffix "-") .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one bridge; call with (dict "root" $ "name" $bridge.name). */}}
{{- define "memhub.bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memhub.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: bridge
memhub.io/bridge: {{ .name }}
{{- end -}}

{{- define "memhub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "memhub.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "memhub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The hub's gRPC address as bridges reach it: the hub Service, never localhost. */}}
{{- define "memhub.hub.address" -}}
{{- printf "%s:%d" (include "memhub.hub.fullname" .) (int .Values.hub.service.port) -}}
{{- end -}}

{{/*
Service name of the bundled Milvus, as the Milvus chart names it
(milvus.fullname: <release>-milvus, or the release name when it contains "milvus").
*/}}
{{- define "memhub.milvus.bundledHost" -}}
{{- if .Values.milvus.fullnameOverride -}}
{{- .Values.milvus.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "milvus" .Values.milvus.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Primary Service name of the bundled PostgreSQL, as the Bitnami chart names it
(common.names.fullname, with a -primary suffix in replication architecture).
*/}}
{{- define "memhub.postgresql.bundledHost" -}}
{{- $full := "" -}}
{{- if .Values.postgresql.fullnameOverride -}}
{{- $full = .Values.postgresql.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "postgresql" .Values.postgresql.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- $full = .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $full = printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- if eq (default "standalone" .Values.postgresql.architecture) "replication" -}}
{{- printf "%s-primary" ($full | trunc 55 | trimSuffix "-") -}}
{{- else -}}
{{- $full -}}
{{- end -}}
{{- end -}}

{{/* MEMHUB_MILVUS_URI. */}}
{{- define "memhub.milvus.uri" -}}
{{- if .Values.milvus.enabled -}}
{{- printf "http://%s:%d" (include "memhub.milvus.bundledHost" .) (int (dig "service" "port" 19530 .Values.milvus)) -}}
{{- else -}}
{{- printf "%s://%s:%d" (ternary "https" "http" .Values.externalMilvus.tls) .Values.externalMilvus.host (int .Values.externalMilvus.port) -}}
{{- end -}}
{{- end -}}

{{/*
Fail early, with a message saying what to set, on combinations that cannot work.
Included by the hub Deployment, so every render checks them.
*/}}
{{- define "memhub.validate" -}}
{{- if and .Values.milvus.enabled .Values.externalMilvus.enabled -}}
{{- fail "memhub: milvus.enabled and externalMilvus.enabled are both true; choose the bundled Milvus or the external one" -}}
{{- end -}}
{{- if not (or .Values.milvus.enabled .Values.externalMilvus.enabled) -}}
{{- fail "memhub: no Milvus configured; set externalMilvus.enabled=true with externalMilvus.host (an existing Milvus 2.5+), or milvus.enabled=true to bundle the Milvus chart (after `helm dependency update`)" -}}
{{- end -}}
{{- if .Values.externalMilvus.enabled -}}
{{- $host := required "memhub: externalMilvus.host is required when externalMilvus.enabled=true (the Milvus proxy Service, e.g. milvus.milvus.svc.cluster.local)" .Values.externalMilvus.host -}}
{{- if has (lower $host) (list "localhost" "127.0.0.1" "::1") -}}
{{- fail (printf "memhub: externalMilvus.host=%s points inside the hub's own pod; use the Milvus Service name or address" $host) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.postgresql.enabled .Values.externalPostgresql.enabled -}}
{{- fail "memhub: postgresql.enabled and externalPostgresql.enabled are both true; choose the bundled PostgreSQL or the external one" -}}
{{- end -}}
{{- if not (or .Values.postgresql.enabled .Values.externalPostgresql.enabled) -}}
{{- fail "memhub: no PostgreSQL configured; set externalPostgresql.enabled=true with externalPostgresql.existingSecret (a Secret holding the database URL), or postgresql.enabled=true to bundle the PostgreSQL chart (after `helm dependency update`)" -}}
{{- end -}}
{{- if not (or .Values.auth.hs256.existingSecret .Values.auth.publicKeys.existingSecret .Values.auth.jwks.existingSecret) -}}
{{- fail "memhub: no token key configured; set auth.hs256.existingSecret (a Secret holding a shared HS256 secret of 32+ bytes, e.g. `kubectl create secret generic memhub-jwt --from-literal=jwt-secret=$(openssl rand -hex 32)`), auth.publicKeys.existingSecret or auth.jwks.existingSecret. Every replica must verify tokens with the same keys." -}}
{{- end -}}
{{- if and .Values.auth.publicKeys.existingSecret (not .Values.auth.publicKeys.keys) -}}
{{- fail "memhub: auth.publicKeys.existingSecret is set but auth.publicKeys.keys is empty; list the PEM keys to use, e.g. [{key: signer.pem, alg: ES256, kid: k1}]" -}}
{{- end -}}
{{- if eq .Values.embedding.provider "openai" -}}
{{- $_ := required "memhub: embedding.baseUrl is required when embedding.provider=openai (e.g. http://tei.embeddings.svc:8080/v1)" .Values.embedding.baseUrl -}}
{{- $_ := required "memhub: embedding.model is required when embedding.provider=openai" .Values.embedding.model -}}
{{- end -}}
{{- if and (eq .Values.embedding.provider "local") (ne (int .Values.embedding.dimension) 384) -}}
{{- fail "memhub: embedding.dimension must be 384 with the local embedding model" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range .Values.bridges -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "memhub: two entries of bridges are named %q; bridge names must be unique" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- end -}}
{{- if .Values.ingress.enabled -}}
{{- $hosts := list -}}
{{- range .Values.bridges -}}
{{- if (dig "ingress" "host" "" .) -}}
{{- $hosts = append $hosts .name -}}
{{- end -}}
{{- end -}}
{{- if not $hosts -}}
{{- fail "memhub: ingress.enabled=true but no entry of bridges has ingress.host; the Ingress only routes to bridges" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Environment shared by the hub and the bridges: tracing. */}}
{{- define "memhub.tracingEnv" -}}
{{- $env := list -}}
{{- with .Values.tracing.otlpEndpoint -}}
{{- $env = append $env (dict "name" "OTEL_EXPORTER_OTLP_ENDPOINT" "value" .) -}}
{{- end -}}
{{- with .Values.tracing.exporter -}}
{{- $env = append $env (dict "name" "MEMHUB_TRACES_EXPORTER" "value" .) -}}
{{- end -}}
{{- if $env -}}
{{- toYaml $env -}}
{{- end -}}
{{- end -}}

{{/* Writable places under a read-only root filesystem. */}}
{{- define "memhub.scratchEnv" -}}
- name: HOME
  value: /tmp
- name: XDG_CACHE_HOME
  value: /tmp/.cache
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
{{- end -}}
