#!/usr/bin/env bash
# make dist: archives of the plugin for every Krew platform, and dist/krew.yaml
# with their URLs and sha256.
set -euo pipefail
VERSION=${VERSION:?set VERSION, e.g. v0.1.0}
BASE_URL=${BASE_URL:-https://github.com/kubectl-topology/kubectl-topology/releases/download/$VERSION}
DIST=${DIST:-dist}
rm -rf "$DIST" && mkdir -p "$DIST"
manifest=$(cat plugins/krew.yaml)
manifest=${manifest//VERSION/$VERSION}
for platform in ${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}; do
  os=${platform%/*} arch=${platform#*/}
  stage="$DIST/stage-$os-$arch"
  mkdir -p "$stage"
  exe=kubectl-topology; [[ $os == windows ]] && exe=kubectl-topology.exe
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X github.com/kubectl-topology/kubectl-topology/internal/version.version=$VERSION" \
    -o "$stage/$exe" ./cmd/kubectl-topology
  cp LICENSE "$stage/"
  [[ $os != windows ]] && cp plugins/kubectl_complete-topology "$stage/"
  archive="kubectl-topology_${VERSION}_${os}_${arch}.tar.gz"
  # Stable archives: sorted names, fixed owner and time.
  tar --sort=name --owner=0 --group=0 --mtime='2026-01-01 00:00Z' -C "$stage" -czf "$DIST/$archive" .
  rm -rf "$stage"
  sum=$(sha256sum "$DIST/$archive" | cut -d' ' -f1)
  manifest=${manifest//URI_${os}_${arch}/$BASE_URL/$archive}
  manifest=${manifest//SHA_${os}_${arch}/$sum}
  echo "$archive $sum"
done
printf '%s\n' "$manifest" > "$DIST/krew.yaml"
echo "wrote $DIST/krew.yaml"
