{{/*
Names, labels and the gateway pod pieces shared by every template.
*/}}

{{- define "mns-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mns-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mns-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mns-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mns-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mns-gateway.labels" -}}
helm.sh/chart: {{ include "mns-gateway.chart" . }}
{{ include "mns-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels of one component (api, worker, migrate, postgresql, test). Call with
(dict "root" $ "component" NAME).
*/}}
{{- define "mns-gateway.componentSelector" -}}
{{ include "mns-gateway.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "mns-gateway.componentLabels" -}}
{{ include "mns-gateway.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "mns-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mns-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mns-gateway.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* "true" when the gateway runs on PostgreSQL, else empty: use as a condition. */}}
{{- define "mns-gateway.postgres" -}}
{{- if eq .Values.store.type "postgresql" }}true{{ end }}
{{- end }}

{{/* "true" when the workers are a Deployment of their own (PostgreSQL), else empty. */}}
{{- define "mns-gateway.workerDeployment" -}}
{{- if and .Values.worker.enabled (include "mns-gateway.postgres" .) }}true{{ end }}
{{- end }}

{{- define "mns-gateway.secretName" -}}
{{- default (include "mns-gateway.fullname" .) .Values.credentials.existingSecret }}
{{- end }}

{{- define "mns-gateway.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "mns-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret holding the database URL, and its key: the user's, the bundled database's or the
chart's copy of store.postgresql.url. */}}
{{- define "mns-gateway.databaseSecretName" -}}
{{- if .Values.store.postgresql.existingSecret }}
{{- .Values.store.postgresql.existingSecret }}
{{- else if .Values.postgresql.enabled }}
{{- include "mns-gateway.postgresql.fullname" . }}
{{- else }}
{{- printf "%s-database" (include "mns-gateway.fullname" .) }}
{{- end }}
{{- end }}

{{- define "mns-gateway.databaseSecretKey" -}}
{{- if .Values.store.postgresql.existingSecret }}
{{- .Values.store.postgresql.existingSecretKey }}
{{- else }}database-url{{ end }}
{{- end }}

{{/* The kubernetes.io/tls Secret with the push-signing key, or empty when the gateway keeps its
own keys. */}}
{{- define "mns-gateway.signingSecretName" -}}
{{- if .Values.signingKey.existingSecret }}
{{- .Values.signingKey.existingSecret }}
{{- else if .Values.signingKey.generate }}
{{- printf "%s-signing-key" (include "mns-gateway.fullname" .) }}
{{- end }}
{{- end }}

{{- define "mns-gateway.claimName" -}}
{{- default (printf "%s-data" (include "mns-gateway.fullname" .)) .Values.persistence.existingClaim }}
{{- end }}

{{/*
Refuse configurations that would corrupt or strand the data, or cut draining short, before
anything is applied. values.schema.json has already checked each value on its own; these are
the rules between values.
*/}}
{{- define "mns-gateway.validate" -}}
{{- $values := .Values }}
{{- if include "mns-gateway.postgres" . }}
{{- $sources := 0 }}
{{- range (list $values.store.postgresql.url $values.store.postgresql.existingSecret $values.postgresql.enabled) }}
{{- if . }}{{ $sources = add1 $sources }}{{ end }}
{{- end }}
{{- if ne $sources 1 }}
{{- fail "store.type=postgresql needs exactly one database: store.postgresql.url, store.postgresql.existingSecret (an external database), or postgresql.enabled=true (the bundled trial database)" }}
{{- end }}
{{- else }}
{{- if gt (int $values.replicaCount) 1 }}
{{- fail "replicaCount must be 1 with store.type=sqlite: the database lives on one volume, mounted by one pod; set store.type=postgresql for several replicas" }}
{{- end }}
{{- if or $values.autoscaling.enabled $values.worker.autoscaling.enabled }}
{{- fail "autoscaling needs store.type=postgresql: with SQLite one pod holds the database" }}
{{- end }}
{{- if gt (int $values.worker.replicaCount) 1 }}
{{- fail "worker.replicaCount above 1 needs store.type=postgresql: with SQLite the worker is one container in the API pod" }}
{{- end }}
{{- if $values.postgresql.enabled }}
{{- fail "postgresql.enabled=true deploys a database the gateway only uses with store.type=postgresql" }}
{{- end }}
{{- end }}
{{- if and $values.worker.enabled (lt (int $values.delivery.threads) 1) }}
{{- fail "delivery.threads must be at least 1 when worker.enabled: the worker would have nothing to run" }}
{{- end }}
{{- if and $values.tracing.enabled (not $values.tracing.endpoint) }}
{{- fail "tracing.enabled needs tracing.endpoint: the OTLP endpoint of your collector, e.g. http://otel-collector.observability:4318" }}
{{- end }}
{{- if ne (empty $values.credentials.accessKeyId) (empty $values.credentials.accessKeySecret) }}
{{- fail "credentials.accessKeyId and credentials.accessKeySecret go together: set both or neither" }}
{{- end }}
{{- $needed := add (int $values.preStopSleepSeconds) (int $values.gateway.gracefulTimeout) 5 }}
{{- if lt (int $values.terminationGracePeriodSeconds) $needed }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least preStopSleepSeconds + gateway.gracefulTimeout + 5 = %d, or Kubernetes kills pods while they drain" (int $values.terminationGracePeriodSeconds) $needed) }}
{{- end }}
{{- end }}

{{/*
Changes to what the pods read from chart-made Secrets, so a `helm upgrade` that changes them
restarts the pods. It hashes the values, not the Secrets: generated passwords and keys (random
on every offline render, kept by lookup on a real upgrade) must not restart pods on their own.
*/}}
{{- define "mns-gateway.secretChecksum" -}}
{{- $inputs := dict "credentials" .Values.credentials "bridges" .Values.delivery.queueBridges "store" .Values.store "signing" .Values.signingKey "postgresql" .Values.postgresql.auth }}
{{- toJson $inputs | sha256sum }}
{{- end }}

{{/*
The MNS_GATEWAY_* environment of a gateway container. Call with
(dict "root" $ "deliveryThreads" N): N is 0 in the API pods when workers run apart.
*/}}
{{- define "mns-gateway.env" -}}
{{- $root := .root }}
{{- $values := $root.Values }}
{{- $secret := include "mns-gateway.secretName" $root -}}
- name: MNS_GATEWAY_DATA_DIR
  value: /data
- name: MNS_GATEWAY_HOST
  value: "0.0.0.0"
- name: MNS_GATEWAY_PORT
  value: "8080"
- name: MNS_GATEWAY_ACCOUNT_ID
  value: {{ $values.gateway.accountId | quote }}
{{- with $values.gateway.region }}
- name: MNS_GATEWAY_REGION
  value: {{ . | quote }}
{{- end }}
- name: MNS_GATEWAY_PUBLIC_URL
  value: {{ $values.gateway.publicUrl | quote }}
- name: MNS_GATEWAY_MAX_BODY_BYTES
  value: {{ $values.gateway.maxBodyBytes | int | quote }}
{{- if include "mns-gateway.postgres" $root }}
- name: MNS_GATEWAY_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "mns-gateway.databaseSecretName" $root }}
      key: {{ include "mns-gateway.databaseSecretKey" $root }}
- name: MNS_GATEWAY_DATABASE_POOL_SIZE
  value: {{ $values.store.postgresql.poolSize | int | quote }}
{{- else }}
- name: MNS_GATEWAY_SQLITE_SYNCHRONOUS
  value: {{ $values.store.sqlite.synchronous | upper | quote }}
{{- end }}
- name: MNS_GATEWAY_WORKERS
  value: {{ $values.gateway.workers | int | quote }}
- name: MNS_GATEWAY_THREADS
  value: {{ $values.gateway.threads | int | quote }}
- name: MNS_GATEWAY_WORKER_CLASS
  value: {{ $values.gateway.workerClass | quote }}
- name: MNS_GATEWAY_GRACEFUL_TIMEOUT
  value: {{ $values.gateway.gracefulTimeout | quote }}
- name: MNS_GATEWAY_ADMIN_ACCESS_KEYS
  value: {{ join "," $values.gateway.adminAccessKeys | quote }}
- name: MNS_GATEWAY_CONSOLE
  value: {{ ternary "1" "0" $values.gateway.console | quote }}
- name: MNS_GATEWAY_DATABASE_TIMEOUT
  value: {{ $values.gateway.databaseTimeout | quote }}
- name: MNS_GATEWAY_MAX_WAITERS
  value: {{ $values.gateway.maxWaiters | int | quote }}
- name: MNS_GATEWAY_LONG_POLL_RECHECK
  value: {{ $values.gateway.longPollRecheck | quote }}
- name: MNS_GATEWAY_MAX_QUEUES
  value: {{ $values.gateway.maxQueues | int | quote }}
- name: MNS_GATEWAY_HEADER_TIMEOUT
  value: {{ $values.gateway.headerTimeout | quote }}
- name: MNS_GATEWAY_MAX_CONNECTIONS
  value: {{ $values.gateway.maxConnections | int | quote }}
{{- with $values.gateway.logDir }}
- name: MNS_GATEWAY_LOG_DIR
  value: {{ . | quote }}
{{- end }}
{{- /* Empty: forever. */}}
- name: MNS_GATEWAY_LOG_RETENTION
  value: {{ ternary (toString (int $values.gateway.logRetention)) "" (gt (int $values.gateway.logRetention) 0) | quote }}
- name: MNS_GATEWAY_HISTORY_RETENTION
  value: {{ $values.gateway.historyRetention | int | quote }}
- name: MNS_GATEWAY_DELIVERY_THREADS
  value: {{ .deliveryThreads | int | quote }}
- name: MNS_GATEWAY_MAX_PUSHES_PER_ROUTE
  value: {{ $values.delivery.maxPushesPerRoute | int | quote }}
- name: MNS_GATEWAY_LEASE_SECONDS
  value: {{ $values.delivery.leaseSeconds | quote }}
- name: MNS_GATEWAY_PUSH_TIMEOUT
  value: {{ $values.delivery.pushTimeout | quote }}
- name: MNS_GATEWAY_EGRESS_ALLOW
  value: {{ join "," $values.delivery.egress.allow | quote }}
- name: MNS_GATEWAY_EGRESS_DENY
  value: {{ join "," $values.delivery.egress.deny | quote }}
{{- if $values.delivery.proxy.url }}
- name: MNS_GATEWAY_PUSH_PROXY
  value: {{ $values.delivery.proxy.url | quote }}
{{- else }}
- name: MNS_GATEWAY_PUSH_PROXY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: push-proxy
      optional: true
{{- end }}
- name: MNS_GATEWAY_PUSH_NO_PROXY
  value: {{ join "," $values.delivery.proxy.noProxy | quote }}
{{- if $values.delivery.tls.caSecret }}
- name: MNS_GATEWAY_PUSH_CA_FILE
  value: /etc/mns-gateway/push-ca/{{ $values.delivery.tls.caKey }}
{{- end }}
{{- if $values.delivery.tls.clientCertSecret }}
- name: MNS_GATEWAY_PUSH_CLIENT_CERT
  value: /etc/mns-gateway/push-client/tls.crt
- name: MNS_GATEWAY_PUSH_CLIENT_KEY
  value: /etc/mns-gateway/push-client/tls.key
{{- end }}
- name: MNS_GATEWAY_MAIL_FROM
  value: {{ $values.delivery.mail.from | quote }}
{{- if include "mns-gateway.signingSecretName" $root }}
- name: MNS_GATEWAY_SIGNING_KEY_FILE
  value: /etc/mns-gateway/signing/tls.key
- name: MNS_GATEWAY_SIGNING_CERT_FILE
  value: /etc/mns-gateway/signing/tls.crt
{{- end }}
{{- range $variable, $key := dict "MNS_GATEWAY_ACCESS_KEY_ID" "access-key-id" "MNS_GATEWAY_ACCESS_KEY_SECRET" "access-key-secret" "MNS_GATEWAY_ACCESS_KEYS" "access-keys" "MNS_GATEWAY_SMTP_URL" "smtp-url" "MNS_GATEWAY_QUEUE_BRIDGES" "queue-bridges" }}
- name: {{ $variable }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $key }}
      optional: true
{{- end }}
{{- if $values.tracing.enabled }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $values.tracing.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $values.tracing.protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ $values.tracing.serviceName | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ $values.tracing.sampler | quote }}
{{- with $values.tracing.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- with $values.tracing.resourceAttributes }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with $values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
A gateway container: image, arguments, environment, security and mounts. Call with
(dict "root" $ "name" NAME "args" LIST "deliveryThreads" N "resources" MAP).
*/}}
{{- define "mns-gateway.container" -}}
{{- $root := .root -}}
- name: {{ .name }}
  image: {{ include "mns-gateway.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args: {{ toJson .args }}
  env:
    {{- include "mns-gateway.env" (dict "root" $root "deliveryThreads" .deliveryThreads) | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  volumeMounts:
    {{- include "mns-gateway.volumeMounts" $root | nindent 4 }}
{{- end }}

{{/*
The delivery worker's container (a sidecar of the API with SQLite, a Deployment of its own with
PostgreSQL). It serves no API: its probes and metrics answer on a port of their own
(`mns-gateway worker --probes`), probed as the API's are.
*/}}
{{- define "mns-gateway.workerContainer" -}}
{{- $root := . -}}
{{- $args := list "worker" "--probes" (printf "0.0.0.0:%d" (int .Values.worker.probePort)) }}
{{- include "mns-gateway.container" (dict "root" $root "name" "worker" "args" $args "resources" .Values.worker.resources "deliveryThreads" .Values.delivery.threads) }}
  ports:
    - name: probes
      containerPort: {{ .Values.worker.probePort }}
      protocol: TCP
{{- range $kind := list "startupProbe" "livenessProbe" "readinessProbe" }}
{{- with index $root.Values $kind }}
{{- $probe := deepCopy . }}
{{- if $probe.httpGet }}
{{- $_ := set $probe.httpGet "port" "probes" }}
{{- end }}
  {{ $kind }}:
    {{- toYaml $probe | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Volume mounts of a gateway container: the data volume, a writable /tmp, the signing key.
*/}}
{{- define "mns-gateway.volumeMounts" -}}
- name: data
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- if include "mns-gateway.signingSecretName" . }}
- name: signing-key
  mountPath: /etc/mns-gateway/signing
  readOnly: true
{{- end }}
{{- if .Values.delivery.tls.caSecret }}
- name: push-ca
  mountPath: /etc/mns-gateway/push-ca
  readOnly: true
{{- end }}
{{- if .Values.delivery.tls.clientCertSecret }}
- name: push-client
  mountPath: /etc/mns-gateway/push-client
  readOnly: true
{{- end }}
{{- end }}

{{/*
The pod volumes behind mns-gateway.volumeMounts. Only SQLite keeps anything lasting in /data.
*/}}
{{- define "mns-gateway.volumes" -}}
- name: data
{{- if and .Values.persistence.enabled (not (include "mns-gateway.postgres" .)) }}
  persistentVolumeClaim:
    claimName: {{ include "mns-gateway.claimName" . }}
{{- else }}
  emptyDir: {}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with include "mns-gateway.signingSecretName" . }}
- name: signing-key
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- with .Values.delivery.tls.caSecret }}
- name: push-ca
  secret:
    secretName: {{ . }}
    defaultMode: 0444
{{- end }}
{{- with .Values.delivery.tls.clientCertSecret }}
- name: push-client
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{/*
The metadata of a gateway Deployment's pods. Call with (dict "root" $ "component" NAME).
*/}}
{{- define "mns-gateway.podMetadata" -}}
annotations:
  checksum/secrets: {{ include "mns-gateway.secretChecksum" .root }}
  {{- with .root.Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
labels:
  {{- include "mns-gateway.componentLabels" . | nindent 2 }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
Pod-level settings shared by the gateway pods. Call with (dict "root" $ "component" NAME).
*/}}
{{- define "mns-gateway.podSpecCommon" -}}
{{- $root := .root }}
{{- $values := $root.Values -}}
serviceAccountName: {{ include "mns-gateway.serviceAccountName" $root }}
automountServiceAccountToken: {{ $values.serviceAccount.automountToken }}
{{- with $values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ $values.terminationGracePeriodSeconds }}
{{- with $values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range . }}
  - {{- toYaml (omit . "labelSelector") | nindent 4 }}
    labelSelector:
      matchLabels:
        {{- include "mns-gateway.componentSelector" $ | nindent 8 }}
  {{- end }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $values.postgresql.enabled }}
initContainers:
  {{- include "mns-gateway.waitForDatabase" $root | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Holds a gateway pod back until the bundled database accepts connections, so a first install
does not crash-loop while PostgreSQL initialises.
*/}}
{{- define "mns-gateway.waitForDatabase" -}}
{{- $pg := .Values.postgresql -}}
- name: wait-for-database
  image: {{ printf "%s:%s" $pg.image.repository $pg.image.tag }}
  imagePullPolicy: {{ $pg.image.pullPolicy }}
  command:
    - sh
    - -c
    # --username: libpq would otherwise look up this uid, which the image does not know.
    - until pg_isready --quiet --host={{ include "mns-gateway.postgresql.fullname" . }} --port=5432 --username={{ $pg.auth.username }} --timeout=5; do sleep 2; done
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
    limits:
      memory: 64Mi
{{- end }}

{{/*
A PodDisruptionBudget for one component. Call with
(dict "root" $ "component" NAME "name" NAME "budget" MAP).
*/}}
{{- define "mns-gateway.podDisruptionBudget" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "mns-gateway.componentLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .budget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "mns-gateway.componentSelector" . | nindent 6 }}
{{- end }}

{{/*
A HorizontalPodAutoscaler for one Deployment. Call with
(dict "root" $ "component" NAME "name" NAME "scaling" MAP).
*/}}
{{- define "mns-gateway.autoscaler" -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .name }}
  labels:
    {{- include "mns-gateway.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .name }}
  minReplicas: {{ .scaling.minReplicas }}
  maxReplicas: {{ .scaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .scaling.targetCPUUtilizationPercentage }}
    {{- with .scaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
{{- end }}
