{{/* Chart name, truncated to 63 characters (DNS label). */}}
{{- define "poolboy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name, the prefix of every object this chart creates. */}}
{{- define "poolboy.fullname" -}}
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

{{- define "poolboy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: poolboy
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "poolboy.selectorLabels" . }}
{{- end -}}

{{- define "poolboy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "poolboy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector labels of one component: call with (dict "root" $ "component" "watcher"). */}}
{{- define "poolboy.componentSelectorLabels" -}}
{{ include "poolboy.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "poolboy.componentLabels" -}}
{{ include "poolboy.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "poolboy.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "poolboy.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "poolboy.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* True (non-empty) when the chart deploys its own Redis. */}}
{{- define "poolboy.bundledRedis" -}}
{{- if not (or .Values.redis.url .Values.redis.existingSecret.name) -}}true{{- end -}}
{{- end -}}

{{/* The Redis URL environment variable: external URL, URL from a Secret, or the bundled Redis Service. */}}
{{- define "poolboy.redisEnv" -}}
- name: POOLBOY_REDIS_URL
{{- if .Values.redis.existingSecret.name }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret.name }}
      key: {{ .Values.redis.existingSecret.key }}
{{- else if .Values.redis.url }}
  value: {{ .Values.redis.url | quote }}
{{- else }}
  value: {{ printf "redis://%s-redis:6379/0" (include "poolboy.fullname" .) | quote }}
{{- end }}
{{- end -}}

{{/* Environment shared by every Poolboy container (Settings.from_env reads these). */}}
{{- define "poolboy.env" -}}
- name: POOLBOY_DOMAIN
  value: {{ .Values.domain | quote }}
- name: POOLBOY_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{ include "poolboy.redisEnv" . }}
- name: POOLBOY_MANAGE_CLAIMS_INTERVAL
  value: {{ .Values.intervals.manageClaims | quote }}
- name: POOLBOY_MANAGE_HANDLES_INTERVAL
  value: {{ .Values.intervals.manageHandles | quote }}
- name: POOLBOY_MANAGE_POOLS_INTERVAL
  value: {{ .Values.intervals.managePools | quote }}
- name: POOLBOY_RESYNC_INTERVAL
  value: {{ .Values.intervals.resync | quote }}
- name: POOLBOY_SWEEP_DUE_INTERVAL
  value: {{ .Values.intervals.sweepDue | quote }}
- name: POOLBOY_PERMANENT_ERROR_RECHECK
  value: {{ .Values.intervals.permanentErrorRecheck | quote }}
- name: POOLBOY_WATCHER_LEASE_NAME
  value: {{ .Values.watcher.leaseName | default (printf "%s-watcher" (include "poolboy.fullname" .)) | quote }}
- name: POOLBOY_WATCHER_LEASE_SECONDS
  value: {{ .Values.watcher.leaseSeconds | quote }}
- name: POOLBOY_METRICS_PORT
  value: {{ ternary .Values.metrics.port 0 .Values.metrics.enabled | quote }}
- name: HOME
  value: /tmp
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod annotations: user annotations plus Prometheus scrape hints for components that serve metrics. */}}
{{- define "poolboy.podAnnotations" -}}
{{- with .root.Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- if and .metrics .root.Values.metrics.enabled }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .root.Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* Scheduling and security settings shared by every pod; call with the root context. */}}
{{- define "poolboy.podSpecCommon" -}}
serviceAccountName: {{ include "poolboy.serviceAccountName" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
securityContext:
{{ toYaml .Values.podSecurityContext | indent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{ toYaml . }}
{{- end }}
{{- with .Values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
volumes:
- name: tmp
  emptyDir: {}
{{- end -}}

{{/* Container fields shared by every Poolboy container: image, env, security, writable /tmp. */}}
{{- define "poolboy.containerCommon" -}}
image: {{ include "poolboy.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
workingDir: /tmp
env:
{{ include "poolboy.env" . }}
securityContext:
{{ toYaml .Values.securityContext | indent 2 }}
volumeMounts:
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Metrics port and liveness probe of a component that serves /metrics; call with the root context. */}}
{{- define "poolboy.metricsPort" -}}
{{- if .Values.metrics.enabled }}
ports:
- name: metrics
  containerPort: {{ .Values.metrics.port }}
  protocol: TCP
{{- if .Values.probes.enabled }}
livenessProbe:
  tcpSocket:
    port: metrics
  initialDelaySeconds: 30
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 6
{{- end }}
{{- end }}
{{- end -}}
