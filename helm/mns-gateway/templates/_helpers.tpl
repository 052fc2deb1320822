{{/*
Names, labels and the gateway environment shared by every template.
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

{{- define "mns-gateway.secretName" -}}
{{- default (include "mns-gateway.fullname" .) .Values.credentials.existingSecret }}
{{- end }}

{{- define "mns-gateway.claimName" -}}
{{- default (printf "%s-data" (include "mns-gateway.fullname" .)) .Values.persistence.existingClaim }}
{{- end }}

{{/*
Refuse configurations that would corrupt or strand the data, before anything is applied.
*/}}
{{- define "mns-gateway.validate" -}}
{{- if ne .Values.store.type "sqlite" }}
{{- fail (printf "store.type %q is not implemented: only \"sqlite\" is (PostgreSQL, for several replicas, is a later feature)" .Values.store.type) }}
{{- end }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail "replicaCount must be 1 with store.type=sqlite: the database lives on one volume, mounted by one pod; several replicas need PostgreSQL, a later feature" }}
{{- end }}
{{- if and .Values.worker.enabled (lt (int .Values.delivery.threads) 1) }}
{{- fail "delivery.threads must be at least 1 when worker.enabled: the worker would have nothing to run" }}
{{- end }}
{{- if and .Values.credentials.accessKeySecret (not .Values.credentials.accessKeyId) }}
{{- fail "credentials.accessKeySecret is set without credentials.accessKeyId" }}
{{- end }}
{{- end }}

{{/*
The MNS_GATEWAY_* environment of a gateway container. Call with
(dict "root" $ "deliveryThreads" N): N is 0 in the API container when a worker runs beside it.
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
- name: MNS_GATEWAY_REGION
  value: {{ $values.gateway.region | quote }}
- name: MNS_GATEWAY_PUBLIC_URL
  value: {{ $values.gateway.publicUrl | quote }}
- name: MNS_GATEWAY_MAX_BODY_BYTES
  value: {{ $values.gateway.maxBodyBytes | int | quote }}
- name: MNS_GATEWAY_SQLITE_SYNCHRONOUS
  value: {{ $values.store.sqlite.synchronous | upper | quote }}
- name: MNS_GATEWAY_WORKERS
  value: {{ $values.gateway.workers | int | quote }}
- name: MNS_GATEWAY_THREADS
  value: {{ $values.gateway.threads | int | quote }}
- name: MNS_GATEWAY_WORKER_CLASS
  value: {{ $values.gateway.workerClass | quote }}
- name: MNS_GATEWAY_ADMIN_ACCESS_KEYS
  value: {{ join "," $values.gateway.adminAccessKeys | quote }}
- name: MNS_GATEWAY_MAX_WAITERS
  value: {{ $values.gateway.maxWaiters | int | quote }}
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
- name: MNS_GATEWAY_MAIL_FROM
  value: {{ $values.delivery.mail.from | quote }}
{{- if $values.signingKey.existingSecret }}
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
{{- with $values.extraEnv }}
{{ toYaml . }}
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
{{- if .Values.signingKey.existingSecret }}
- name: signing-key
  mountPath: /etc/mns-gateway/signing
  readOnly: true
{{- end }}
{{- end }}

{{/*
Pod-level settings shared by the API and worker pods.
*/}}
{{- define "mns-gateway.podSpecCommon" -}}
serviceAccountName: {{ include "mns-gateway.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The pod volumes behind mns-gateway.volumeMounts.
*/}}
{{- define "mns-gateway.volumes" -}}
- name: data
{{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "mns-gateway.claimName" . }}
{{- else }}
  emptyDir: {}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if .Values.signingKey.existingSecret }}
- name: signing-key
  secret:
    secretName: {{ .Values.signingKey.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end }}
