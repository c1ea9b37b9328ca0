#!/usr/bin/env bash
# Checks the Helm chart: helm lint, then helm template with each value set
# below (every template and option rendered at least once), every rendering
# validated by kubeconform -strict against the committed schemas. A kind
# without a schema there fails (no -ignore-missing-schemas): add it to
# deploy/helm/schemas.py. Also checks that invalid values are refused.
# Usage: deploy/helm/check.sh CHART SCHEMA_DIR (HELM, KUBECONFORM name the tools).
set -euo pipefail
chart=$1 schemas=$2
helm=${HELM:-helm} kubeconform=${KUBECONFORM:-kubeconform}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$helm" lint --strict "$chart"

sets=(
  ""
  "gpus=0,podDisruptionBudget.enabled=false,service.type=LoadBalancer"
  "autoscaling.enabled=true,serviceMonitor.enabled=true,podMonitor.enabled=true,modelRepository.source=pvc,modelRepository.pvc.claimName=models,modelRepository.pvc.subPath=repo"
  "keda.enabled=true,modelRepository.source=hostPath,modelRepository.hostPath.path=/srv/models,podDisruptionBudget.maxUnavailable=1"
  "modelRepository.source=configMap,modelRepository.configMap.name=pipelines,modelRepository.configMap.items[0].key=config.pbtxt,modelRepository.configMap.items[0].path=pre/config.pbtxt"
  "modelRepository.source=init,modelRepository.init.command={sh,-c,true},runtimeClassName=nvidia,extraArgs={--log-verbose=1},tolerations[0].key=nvidia.com/gpu,tolerations[0].operator=Exists"
)
i=0
for s in "${sets[@]}"; do
  i=$((i + 1))
  echo "helm template --set '$s'"
  "$helm" template sluice "$chart" ${s:+--set "$s"} >"$out/$i.yaml"
done
"$kubeconform" -strict -summary -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$out"/*.yaml

# Values the chart must refuse, each with a message naming the problem.
bad=(
  "modelRepository.source=s3|modelRepository.source"
  "modelRepository.source=pvc|modelRepository.pvc.claimName"
  "modelRepository.source=init|modelRepository.init.command"
  "autoscaling.enabled=true,keda.enabled=true|choose one"
)
for b in "${bad[@]}"; do
  if err=$("$helm" template sluice "$chart" --set "${b%%|*}" 2>&1 >/dev/null); then
    echo "helm template --set '${b%%|*}' rendered; want an error" >&2
    exit 1
  fi
  grep -qF "${b#*|}" <<<"$err" || { echo "helm template --set '${b%%|*}': $err (want it to name ${b#*|})" >&2; exit 1; }
done
echo "chart-check: ${#sets[@]} value sets valid, ${#bad[@]} invalid ones refused"
