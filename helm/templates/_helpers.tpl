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

{{/* The ServiceAccount of one component (watcher, worker, beat, flower, redis, test): call with (dict "root" $
"component" "watcher"). One per component, so each gets exactly the RBAC its code needs. */}}
{{- define "poolboy.serviceAccountName" -}}
{{- printf "%s-%s" (include "poolboy.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease that elects the active watcher. */}}
{{- define "poolboy.watcherLeaseName" -}}
{{- .Values.watcher.leaseName | default (printf "%s-watcher" (include "poolboy.fullname" .)) -}}
{{- end -}}

{{/* The project image: repository:tag, and @digest when image.digest is set (the digest then decides). */}}
{{- define "poolboy.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/* True (non-empty) when the chart deploys its own Redis. */}}
{{- define "poolboy.bundledRedis" -}}
{{- if not (or .Values.redis.url .Values.redis.existingSecret.name) -}}true{{- end -}}
{{- end -}}

{{/* Secret and key of the bundled Redis's password (generated, or the user's): the admin's with ACL users. */}}
{{- define "poolboy.redisPasswordSecret" -}}
{{- .Values.redis.auth.existingSecret | default (printf "%s-redis" (include "poolboy.fullname" .)) -}}
{{- end -}}

{{- define "poolboy.redisPasswordKey" -}}
{{- if .Values.redis.auth.existingSecret }}{{ .Values.redis.auth.existingSecretKey }}{{ else }}password{{ end -}}
{{- end -}}

{{/* True (non-empty) when the bundled Redis has one ACL user per component (files/redis-acl.conf). */}}
{{- define "poolboy.redisAcl" -}}
{{- if and (include "poolboy.bundledRedis" .) .Values.redis.auth.enabled .Values.redis.acl.enabled -}}true{{- end -}}
{{- end -}}

{{/* The Secret key of an ACL user's password: call with (dict "root" $ "user" "watcher"); the admin's is the
bundled Redis's password key. */}}
{{- define "poolboy.redisUserKey" -}}
{{- if eq .user "admin" }}{{ include "poolboy.redisPasswordKey" .root }}{{ else }}{{ printf "%s-password" .user }}{{ end -}}
{{- end -}}

{{/* The users of files/redis-acl.conf with the rules chosen by the values, as JSON {"order": [...], "rules":
{user: [rule, ...]}}: `<user> <rules>` lines, plus the rules of `<user>+<option>` lines whose option is on
(remote-control: flower.remoteControl). stack/redis_acl.py reads the file the same way. */}}
{{- define "poolboy.redisAclUsers" -}}
{{- $options := list -}}
{{- if .Values.flower.remoteControl }}{{ $options = append $options "remote-control" }}{{ end -}}
{{- $order := list -}}
{{- $rules := dict -}}
{{- $extra := dict -}}
{{- range $line := splitList "\n" (.Files.Get "files/redis-acl.conf") -}}
{{- $words := compact (splitList " " (trim $line)) -}}
{{- if and $words (not (hasPrefix "#" (first $words))) -}}
{{- $name := first $words -}}
{{- if contains "+" $name -}}
{{- $parts := splitList "+" $name -}}
{{- if has (index $parts 1) $options -}}
{{- $_ := set $extra (index $parts 0) (concat (get $extra (index $parts 0) | default list) (rest $words)) -}}
{{- end -}}
{{- else -}}
{{- $order = append $order $name -}}
{{- $_ := set $rules $name (rest $words) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name := $order -}}
{{- $_ := set $rules $name (concat (get $rules $name) (get $extra $name | default list)) -}}
{{- end -}}
{{- toJson (dict "order" $order "rules" $rules) -}}
{{- end -}}

{{/* redis-server's arguments that define the ACL users: `--user <name> reset on >$(REDIS_PASSWORD_<NAME>)
<rules>` (`reset off` for default), the password expanded by Kubernetes from the container's environment. */}}
{{- define "poolboy.redisUserArgs" -}}
{{- $users := include "poolboy.redisAclUsers" . | fromJson -}}
{{- range $name := $users.order }}
- --user
- {{ $name | quote }}
- reset
{{- if eq $name "default" }}
- "off"
{{- else }}
- "on"
- {{ printf ">$(REDIS_PASSWORD_%s)" (upper $name) | quote }}
{{- end }}
{{- range $rule := index $users.rules $name }}
- {{ $rule | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Every ACL user's password as REDIS_PASSWORD_<NAME> (the bundled Redis's container). */}}
{{- define "poolboy.redisUserPasswordEnv" -}}
{{- $root := . -}}
{{- $users := include "poolboy.redisAclUsers" . | fromJson -}}
{{- range $name := $users.order }}
{{- if ne $name "default" }}
- name: {{ printf "REDIS_PASSWORD_%s" (upper $name) }}
  valueFrom:
    secretKeyRef:
      name: {{ include "poolboy.redisPasswordSecret" $root }}
      key: {{ include "poolboy.redisUserKey" (dict "root" $root "user" $name) }}
{{- end }}
{{- end }}
{{- end -}}

{{/* True (non-empty) when the bundled Redis serves TLS (redis.tls.enabled). */}}
{{- define "poolboy.redisTls" -}}
{{- if and (include "poolboy.bundledRedis" .) .Values.redis.tls.enabled -}}true{{- end -}}
{{- end -}}

{{/* The Secret and key of the CA bundle the components verify Redis's certificate with: redis.tls.caSecret, else
the bundled Redis's own TLS Secret (its ca.crt). Empty when there is none. */}}
{{- define "poolboy.redisCaSecret" -}}
{{- if .Values.redis.tls.caSecret.name }}{{ .Values.redis.tls.caSecret.name }}{{ else if include "poolboy.redisTls" . }}{{ .Values.redis.tls.existingSecret }}{{ end -}}
{{- end -}}

{{- define "poolboy.redisCaKey" -}}
{{- if .Values.redis.tls.caSecret.name }}{{ .Values.redis.tls.caSecret.key }}{{ else }}ca.crt{{ end -}}
{{- end -}}

{{/* maxmemory of the bundled Redis in bytes: redis.maxmemory when set, else redis.maxmemoryPercent (80) of
redis.resources.limits.memory (a Kubernetes quantity: plain bytes or k, K, M, G, T, Ki, Mi, Gi, Ti), rounded
down; empty when neither is set (no limit). */}}
{{- define "poolboy.redisMaxmemory" -}}
{{- if .Values.redis.maxmemory -}}
{{- .Values.redis.maxmemory -}}
{{- else -}}
{{- $raw := dig "limits" "memory" "" .Values.redis.resources -}}
{{- $limit := ternary (printf "%.0f" (float64 $raw)) (toString $raw) (or (kindIs "float64" $raw) (kindIs "int64" $raw) (kindIs "int" $raw)) -}}
{{- if $limit -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(k|K|M|G|T|Ki|Mi|Gi|Ti)?$" $limit) -}}
{{- fail (printf "redis.resources.limits.memory %q is not a quantity maxmemory can be computed from; set redis.maxmemory" $limit) -}}
{{- end -}}
{{- $number := regexFind "^[0-9.]+" $limit | float64 -}}
{{- $units := dict "" 1.0 "k" 1e3 "K" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 -}}
{{- $bytes := mulf $number (get $units (regexReplaceAll "^[0-9.]+" $limit "")) -}}
{{- printf "%d" (int64 (floor (divf (mulf $bytes .Values.redis.maxmemoryPercent) 100))) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A random secret value that survives upgrades: the value already in the cluster's Secret, else a new one.
Call with (dict "root" $ "name" secretName "key" key "length" 32). */}}
{{- define "poolboy.persistentRandom" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .name -}}
{{- if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum (int .length) -}}
{{- end -}}
{{- end -}}

{{/* Redis connection environment of a component: external URL, URL from a Secret, or the bundled Redis as the
component's own ACL user (with its own password; the one shared password without ACL users). Call with (dict
"root" $ "user" "watcher"). */}}
{{- define "poolboy.redisEnv" -}}
{{- $root := .root -}}
{{- $values := $root.Values -}}
{{- $fullname := include "poolboy.fullname" $root -}}
{{- $scheme := ternary "rediss" "redis" (eq (include "poolboy.redisTls" $root) "true") -}}
{{- if $values.redis.existingSecret.name }}
- name: POOLBOY_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $values.redis.existingSecret.name }}
      key: {{ $values.redis.existingSecret.key }}
{{- else if $values.redis.url }}
- name: POOLBOY_REDIS_URL
  value: {{ $values.redis.url | quote }}
{{- else if include "poolboy.redisAcl" $root }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "poolboy.redisPasswordSecret" $root }}
      key: {{ include "poolboy.redisUserKey" (dict "root" $root "user" .user) }}
- name: POOLBOY_REDIS_URL
  value: {{ printf "%s://%s:$(REDIS_PASSWORD)@%s-redis:6379/0" $scheme .user $fullname | quote }}
{{- else if $values.redis.auth.enabled }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "poolboy.redisPasswordSecret" $root }}
      key: {{ include "poolboy.redisPasswordKey" $root }}
- name: POOLBOY_REDIS_URL
  value: {{ printf "%s://:$(REDIS_PASSWORD)@%s-redis:6379/0" $scheme $fullname | quote }}
{{- else }}
- name: POOLBOY_REDIS_URL
  value: {{ printf "%s://%s-redis:6379/0" $scheme $fullname | quote }}
{{- end }}
{{- with $values.redis.sentinel.masterName }}
- name: POOLBOY_REDIS_SENTINEL_MASTER
  value: {{ . | quote }}
{{- end }}
{{- if include "poolboy.redisCaSecret" $root }}
- name: POOLBOY_REDIS_TLS_CA_FILE
  value: {{ printf "/etc/poolboy/redis-tls/%s" (include "poolboy.redisCaKey" $root) | quote }}
{{- end }}
{{- end -}}

{{/* Environment shared by every Poolboy container (Settings.from_env reads these); call with (dict "root" $
"user" "watcher"), the component's Redis ACL user. */}}
{{- define "poolboy.env" -}}
{{- $redis := dict "root" .root "user" .user -}}
{{- with .root -}}
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
{{- include "poolboy.redisEnv" $redis }}
- name: POOLBOY_MANAGE_CLAIMS_INTERVAL
  value: {{ .Values.intervals.manageClaims | quote }}
- name: POOLBOY_MANAGE_HANDLES_INTERVAL
  value: {{ .Values.intervals.manageHandles | quote }}
- name: POOLBOY_TIME_DEPENDENT_INTERVAL
  value: {{ .Values.intervals.timeDependent | quote }}
- name: POOLBOY_MANAGE_POOLS_INTERVAL
  value: {{ .Values.intervals.managePools | quote }}
- name: POOLBOY_RESYNC_INTERVAL
  value: {{ .Values.intervals.resync | quote }}
- name: POOLBOY_SYNC_PERIOD
  value: {{ .Values.intervals.syncPeriod | quote }}
- name: POOLBOY_SWEEP_DUE_INTERVAL
  value: {{ .Values.intervals.sweepDue | quote }}
- name: POOLBOY_PERMANENT_ERROR_RECHECK
  value: {{ .Values.intervals.permanentErrorRecheck | quote }}
- name: POOLBOY_WATCHER_LEASE_NAME
  value: {{ include "poolboy.watcherLeaseName" . | quote }}
- name: POOLBOY_WATCHER_LEASE_SECONDS
  value: {{ .Values.watcher.leaseSeconds | quote }}
- name: POOLBOY_HEALTH_PORT
  value: {{ .Values.health.port | quote }}
- name: POOLBOY_HEALTH_ADDRESS
  value: "0.0.0.0"
- name: POOLBOY_HEALTH_STALL_SECONDS
  value: {{ .Values.health.stallSeconds | quote }}
- name: HOME
  value: /tmp
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
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

{{/* Pod metadata of a component: call with (dict "root" $ "component" "watcher" "metrics" true). */}}
{{- define "poolboy.podMetadata" -}}
labels:
  {{- include "poolboy.componentSelectorLabels" . | nindent 2 }}
  {{- if and .metrics .root.Values.metrics.enabled }}
  poolboy-metrics: "true"
  {{- end }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $annotations := include "poolboy.podAnnotations" . | trim }}
{{- if $annotations }}
annotations:
  {{- $annotations | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Scheduling and security settings shared by every Poolboy pod: call with (dict "root" $ "component" "watcher"
"automount" true "spread" true), plus "saComponent" when the ServiceAccount is shared (every worker group uses the
worker's). Components that make no Kubernetes API call (beat, Flower) get no token. */}}
{{- define "poolboy.podSpecCommon" -}}
{{- $root := .root -}}
serviceAccountName: {{ include "poolboy.serviceAccountName" (dict "root" $root "component" (.saComponent | default .component)) }}
automountServiceAccountToken: {{ .automount }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
securityContext:
{{ toYaml $root.Values.podSecurityContext | indent 2 }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
{{ toYaml . }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- if and .spread $root.Values.topologySpread.enabled }}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: {{ $root.Values.topologySpread.topologyKey }}
  whenUnsatisfiable: {{ $root.Values.topologySpread.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- include "poolboy.componentSelectorLabels" . | nindent 6 }}
{{- end }}
volumes:
- name: tmp
  emptyDir: {}
{{- with include "poolboy.redisCaSecret" $root }}
- name: redis-tls
  secret:
    secretName: {{ . }}
    items:
    - {key: {{ include "poolboy.redisCaKey" $root }}, path: {{ include "poolboy.redisCaKey" $root }}}
{{- end }}
{{- end -}}

{{/* Container fields shared by every Poolboy container: image, security, writable /tmp; root context. The env
list is written by each template (poolboy.env plus what that component adds). */}}
{{- define "poolboy.containerCommon" -}}
image: {{ include "poolboy.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
workingDir: /tmp
securityContext:
{{ toYaml .Values.securityContext | indent 2 }}
volumeMounts:
- name: tmp
  mountPath: /tmp
{{- if include "poolboy.redisCaSecret" . }}
- name: redis-tls
  mountPath: /etc/poolboy/redis-tls
  readOnly: true
{{- end }}
{{- end -}}

{{/* Ports and probes of a component with health endpoints: call with (dict "root" $ "metrics" true). */}}
{{- define "poolboy.portsAndProbes" -}}
{{- $root := .root -}}
ports:
- name: health
  containerPort: {{ $root.Values.health.port }}
  protocol: TCP
{{- if and .metrics $root.Values.metrics.enabled }}
- name: metrics
  containerPort: {{ $root.Values.metrics.port }}
  protocol: TCP
{{- end }}
{{- if $root.Values.probes.enabled }}
startupProbe:
  httpGet: {path: /healthz, port: health}
  {{- toYaml $root.Values.probes.startup | nindent 2 }}
livenessProbe:
  httpGet: {path: /healthz, port: health}
  {{- toYaml $root.Values.probes.liveness | nindent 2 }}
readinessProbe:
  httpGet: {path: /readyz, port: health}
  {{- toYaml $root.Values.probes.readiness | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The metrics port environment of a component that serves /metrics (watcher, workers). */}}
{{- define "poolboy.metricsEnv" -}}
- name: POOLBOY_METRICS_PORT
  value: {{ ternary .Values.metrics.port 0 .Values.metrics.enabled | quote }}
{{- end -}}

{{/* A PodDisruptionBudget for a component: call with (dict "root" $ "component" "watcher"). */}}
{{- define "poolboy.pdb" -}}
{{- if .root.Values.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "poolboy.fullname" .root }}-{{ .component }}
  labels:
    {{- include "poolboy.componentLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .root.Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "poolboy.componentSelectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Worker groups with their defaults merged in (a new group needs only `queues`), as a JSON dict. */}}
{{- define "poolboy.workerGroups" -}}
{{- $groups := dict -}}
{{- range $name, $spec := .Values.workers.groups -}}
{{- $_ := set $groups $name (mergeOverwrite (deepCopy $.Values.workers.groupDefaults) (deepCopy (default dict $spec))) -}}
{{- end -}}
{{- toJson $groups -}}
{{- end -}}

{{/* True (non-empty) when any worker group uses KEDA. */}}
{{- define "poolboy.kedaEnabled" -}}
{{- range $name, $spec := include "poolboy.workerGroups" . | fromJson -}}
{{- if $spec.keda.enabled }}true{{ end -}}
{{- end -}}
{{- end -}}
