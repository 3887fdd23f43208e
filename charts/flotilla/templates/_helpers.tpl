{{/* Prefix of every namespaced object's name. */}}
{{- define "flotilla.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "flotilla.managerName" -}}{{ include "flotilla.fullname" . }}-manager{{- end -}}
{{- define "flotilla.nodeAgentName" -}}{{ include "flotilla.fullname" . }}-nodeagent{{- end -}}
{{- define "flotilla.webhookServiceName" -}}{{ include "flotilla.fullname" . }}-webhook-service{{- end -}}
{{- define "flotilla.webhookSecretName" -}}{{ include "flotilla.fullname" . }}-webhook-certs{{- end -}}

{{- define "flotilla.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The manager pods' selector; values.yaml's default anti-affinity repeats the name and component. */}}
{{- define "flotilla.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{/* Modules of the manager's module table (rollout/cmd/manager/main.go). */}}
{{- define "flotilla.knownModules" -}}
{{- list "advancedcronjob" "analysis" "broadcastjob" "cloneset" "daemonset" "deletionprotection" "ephemeraljob" "nodeagent" "persistentpodstate" "podunavailablebudget" "resourcedistribution" "rollout" "sidecarset" "statefulset" "uniteddeployment" "workloadspread" | toJson -}}
{{- end -}}

{{/*
The webhooks a module serves, by webhook name; every other webhook of webhooks/webhook-configurations.yaml
belongs to the rollout module. A webhook several modules serve lists them, space-separated: it is kept while
any of them runs.
*/}}
{{- define "flotilla.webhookModules" -}}
dcloneset.kb.io: cloneset
vcloneset.kb.io: cloneset
ddaemonset.kb.io: daemonset
vdaemonset.kb.io: daemonset
vephemeraljob.kb.io: ephemeraljob
mpod.kb.io: cloneset sidecarset persistentpodstate workloadspread
msidecarset-pod.kb.io: sidecarset
msidecarset.kb.io: sidecarset
vsidecarset.kb.io: sidecarset
mstatefulset.kb.io: statefulset
vstatefulset.kb.io: statefulset
mcontainerrecreaterequest.kb.io: nodeagent
mimagepulljob.kb.io: nodeagent
vimagepulljob.kb.io: nodeagent
mimagelistpulljob.kb.io: nodeagent
vimagelistpulljob.kb.io: nodeagent
vpodprobemarker.kb.io: nodeagent
madvancedcronjob.kb.io: advancedcronjob
vadvancedcronjob.kb.io: advancedcronjob
mbroadcastjob.kb.io: broadcastjob
vbroadcastjob.kb.io: broadcastjob
vresourcedistribution.kb.io: resourcedistribution
muniteddeployment.kb.io: uniteddeployment
vuniteddeployment.kb.io: uniteddeployment
vanalysistemplate.analysis.flotilla.dev: analysis
vclusteranalysistemplate.analysis.flotilla.dev: analysis
vanalysisrun.analysis.flotilla.dev: analysis
vpersistentpodstate.kb.io: persistentpodstate
vnamespace.kb.io: deletionprotection
vservice.kb.io: deletionprotection
vingress.kb.io: deletionprotection
vcustomresourcedefinition.kb.io: deletionprotection
vbuiltindeployment.kb.io: deletionprotection
vbuiltinreplicaset.kb.io: deletionprotection
vbuiltinstatefulset.kb.io: deletionprotection
vworkloaddeletion.kb.io: deletionprotection
vdeleteprotectionlabel.kb.io: deletionprotection
vpod.kb.io: podunavailablebudget workloadspread
vpodeviction.kb.io: podunavailablebudget workloadspread
vworkloadspread.kb.io: workloadspread
vpodunavailablebudget.kb.io: podunavailablebudget
{{- end -}}

{{/* The --enable-modules value as a JSON list; empty means all modules. Fails on a bad combination. */}}
{{- define "flotilla.modules" -}}
{{- $known := include "flotilla.knownModules" . | fromJsonArray -}}
{{- range .Values.modules -}}
{{- if not (or (eq . "*") (has . $known)) -}}
{{- fail (printf "unknown module %q in modules (known: %s)" . (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.engineOnly .Values.modules -}}
{{- fail "engineOnly runs the rollout module alone: leave modules empty" -}}
{{- end -}}
{{- if .Values.engineOnly -}}
{{- list "rollout" "analysis" | toJson -}}
{{- else -}}
{{- .Values.modules | default list | toJson -}}
{{- end -}}
{{- end -}}

{{/* "true" when the module named .name runs, given the chart context .root. */}}
{{- define "flotilla.moduleEnabled" -}}
{{- $modules := include "flotilla.modules" .root | fromJsonArray -}}
{{- if or (not $modules) (has "*" $modules) (has .name $modules) -}}true{{- end -}}
{{- end -}}

{{/* Feature gates of the manager (rollout/feature). */}}
{{- define "flotilla.knownFeatureGates" -}}
{{- list "AdvancedDeployment" "AppendPodSelector" "DeletionProtectionForCRDCascadingGate" "ImagePullJobGate" "KeepWorkloadPausedOnRolloutDeletion" "PodIndexLabel" "PodProbeMarkerGate" "PodUnavailableBudgetDeleteGate" "PodUnavailableBudgetUpdateGate" "PreDownloadImageForDaemonSetUpdate" "PreDownloadImageForInPlaceUpdate" "RecreatePodWhenChangeVCTInCloneSetGate" "ResourceDistributionGate" "ResourcesDeletionProtection" "RolloutHistory" "SidecarSetPatchPodMetadataDefaultsAllowed" "SidecarTerminator" "StatefulSetAutoDeletePVC" "StatefulSetAutoResizePVCGate" "StatefulSetStartOrdinal" "WorkloadSpread" | toJson -}}
{{- end -}}

{{/* "true" when deletion protection checks the custom resources of Cascading CustomResourceDefinitions: the
deletionprotection module runs with ResourcesDeletionProtection and DeletionProtectionForCRDCascadingGate on. */}}
{{- define "flotilla.crdCascadingDeletionProtection" -}}
{{- $gates := .Values.featureGates -}}
{{- if and (include "flotilla.moduleEnabled" (dict "root" . "name" "deletionprotection")) (eq (get $gates "ResourcesDeletionProtection" | toString) "true") (eq (get $gates "DeletionProtectionForCRDCascadingGate" | toString) "true") -}}true{{- end -}}
{{- end -}}

{{/* --feature-gates value: Name=bool pairs sorted by name. */}}
{{- define "flotilla.featureGates" -}}
{{- $known := include "flotilla.knownFeatureGates" . | fromJsonArray -}}
{{- $pairs := list -}}
{{- range $name := keys .Values.featureGates | sortAlpha -}}
{{- if not (has $name $known) -}}
{{- fail (printf "unknown feature gate %q in featureGates (known: %s)" $name (join ", " $known)) -}}
{{- end -}}
{{- $value := get $.Values.featureGates $name -}}
{{- if not (kindIs "bool" $value) -}}
{{- fail (printf "featureGates.%s must be true or false, not %v" $name $value) -}}
{{- end -}}
{{- $pairs = append $pairs (printf "%s=%t" $name $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* Rules of the first object of a kind in a generated role file (.file, default rbac/role.yaml). */}}
{{- define "flotilla.generatedRules" -}}
{{- $rules := list -}}
{{- $file := .file | default "rbac/role.yaml" -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.root.Files.Get $file) -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if and (eq (get $obj "kind") $.kind) (not $rules) -}}
{{- $rules = get $obj "rules" -}}
{{- end -}}
{{- end -}}
{{- if not $rules -}}
{{- fail (printf "%s has no %s rules: run make manifests" $file .kind) -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}

{{/* The node agent's pods' selector. */}}
{{- define "flotilla.nodeAgentSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nodeagent
{{- end -}}

{{/* "true" when the node agent DaemonSet is installed: enabled, and the nodeagent module (its manager side)
runs. An engine-only install leaves ContainerRecreateRequests to upstream's kruise-daemon. */}}
{{- define "flotilla.nodeAgentEnabled" -}}
{{- if and .Values.nodeAgent.enabled (include "flotilla.moduleEnabled" (dict "root" . "name" "nodeagent")) -}}true{{- end -}}
{{- end -}}
