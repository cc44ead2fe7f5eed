#!/usr/bin/env bash
# Compares `kubectl topology plan -f` with clusterctl v1.10.10's removed
# `alpha topology plan` on the shared fixtures and on the upstream-dialect
# cases under testdata/parity. Usage: parity.sh PLUGIN CLUSTERCTL SHARED_DIR
set -euo pipefail
plugin=$1 clusterctl=$2 shared=$3
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

compare() { # name, expected-dir, inputs...
  local name=$1 expected=$2; shift 2
  local args=()
  for f in "$@"; do args+=(-f "$f"); done
  "$plugin" plan "${args[@]}" --output-directory "$work/$name/ours" >/dev/null
  if [ -z "$expected" ]; then
    expected="$work/$name/upstream"
    mkdir -p "$expected"
    KUBECONFIG=/nonexistent "$clusterctl" alpha topology plan "${args[@]}" -o "$expected" >/dev/null 2>&1
  fi
  echo "== $name"
  if ! (cd "$root" && go run ./hack/parity "$work/$name/ours" "$expected"); then status=1; fi
}

if [ -d "$shared/fixtures/capi-v1beta1" ]; then
  f=$shared/fixtures/capi-v1beta1
  compare fixture-qs1 "$f/plan-qs1" "$f/clusterclass-quick-start.yaml" "$f/cluster-qs1.yaml"
fi
for dir in "$root"/testdata/parity/*/; do
  # clusterctl v1.10 predates v1beta2: a v1beta2 case is the live oracle's
  # (make parity-live, v1.14.2) alone.
  if grep -q "apiVersion: cluster.x-k8s.io/v1beta2" "$dir"cluster.yaml; then
    echo "== $(basename "$dir"): skipped, v1beta2 input (clusterctl v1.10.10 reads v1beta1 only)"
    continue
  fi
  compare "$(basename "$dir")" "" "$dir"*.yaml
done
exit $status
