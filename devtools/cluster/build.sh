#!/usr/bin/env bash
# Build the pinned control-plane binaries from the Go module proxy into a cache outside the repo.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  <- k8s.io/kubernetes
#   etcd                                                              <- go.etcd.io/etcd/server/v3 (etcdmain)
#   kwok, kwokctl                                                     <- sigs.k8s.io/kwok
#
# The cache is keyed by version: $CACHE/<name>-<version>/<name>. Only what is missing is built.
# Prints the directory holding the binaries (symlinks) on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
CACHE=${INFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/inference-control-plane}
BIN="$CACHE/bin"
mkdir -p "$BIN"
# GOFLAGS from the environment (-mod=mod, -mod=vendor) must not change these builds; GOWORK neither.
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off GO111MODULE=on
log() { printf '[build] %s\n' "$*" >&2; }
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }

# One build at a time per cache: parallel test sessions each call this script.
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.build.lock"
  flock 9
fi
# Work directories are removed however the script ends.
works=()
trap 'for w in ${works[@]+"${works[@]}"}; do rm -rf "$w"; done' EXIT
new_work() { work=$(mktemp -d); works+=("$work"); }  # sets the caller's local `work`

have() { [ -x "$CACHE/$1-$2/$1" ]; }
link() { ln -sfn "$CACHE/$1-$2/$1" "$BIN/$1"; }

build_kube() {
  local names=(kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=()
  for n in "${names[@]}"; do have "$n" "$KUBE_VERSION" || missing+=("$n"); done
  if [ ${#missing[@]} -gt 0 ]; then
    local work; new_work
    log "kubernetes $KUBE_VERSION: ${missing[*]} (module proxy, one go.mod, staging modules replaced)"
    local modfile
    modfile=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    local stagingver="v0.${KUBE_VERSION#v1.}"
    {
      echo "module local/kubebuild"
      echo
      sed -n 's/^go \(.*\)/go \1/p' "$modfile"
      echo
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      echo
      echo "replace ("
      # Every staging module k8s.io/kubernetes replaces with ./staging/... becomes its v0.X.Y release.
      sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$stagingver"'#p' "$modfile"
      echo ")"
    } > "$work/go.mod"
    grep -q '=>' "$work/go.mod" || { log "no staging replaces found in $modfile"; exit 1; }
    local pkgs=()
    for n in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$n"); done
    (cd "$work" && printf 'package tools\n\nimport (\n%s)\n' "$(for p in "${pkgs[@]}"; do printf '\t_ "%s"\n' "$p"; done)" > tools.go \
      && go mod tidy >/dev/null 2>&1 || go mod tidy)
    local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
    local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    local ld=""
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$date -X $p.gitCommit=module-proxy-$KUBE_VERSION"
    done
    for n in "${missing[@]}"; do
      mkdir -p "$CACHE/$n-$KUBE_VERSION"
      log "go build $n"
      (cd "$work" && go build -trimpath -ldflags "-s -w $ld" -o "$CACHE/$n-$KUBE_VERSION/$n.tmp" "k8s.io/kubernetes/cmd/$n")
      mv "$CACHE/$n-$KUBE_VERSION/$n.tmp" "$CACHE/$n-$KUBE_VERSION/$n"
    done
    rm -rf "$work"
  fi
  for n in "${names[@]}"; do link "$n" "$KUBE_VERSION"; done
}

build_etcd() {
  if ! have etcd "$ETCD_VERSION"; then
    log "etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3/etcdmain as a dependency)"
    local work; new_work
    cat > "$work/main.go" <<'GO'
// Command etcd is go.etcd.io/etcd/server/v3/etcdmain built as a dependency, because
// `go install go.etcd.io/etcd/v3` refuses the replace directives of the etcd root module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    (cd "$work" && go mod init local/etcdbuild >/dev/null 2>&1 \
      && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >"$work/get.log" 2>&1 && go mod tidy >>"$work/get.log" 2>&1) \
      || { cat "$work/get.log" >&2; log "resolving go.etcd.io/etcd/server/v3@$ETCD_VERSION failed"; exit 1; }
    mkdir -p "$CACHE/etcd-$ETCD_VERSION"
    (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$CACHE/etcd-$ETCD_VERSION/etcd.tmp" .)
    mv "$CACHE/etcd-$ETCD_VERSION/etcd.tmp" "$CACHE/etcd-$ETCD_VERSION/etcd"
    rm -rf "$work"
  fi
  link etcd "$ETCD_VERSION"
}

build_kwok() {
  for n in kwok kwokctl; do
    if ! have "$n" "$KWOK_VERSION"; then
      log "$n $KWOK_VERSION"
      mkdir -p "$CACHE/$n-$KWOK_VERSION"
      GOBIN="$CACHE/$n-$KWOK_VERSION" go install -trimpath \
        -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/$n@$KWOK_VERSION"
    fi
    link "$n" "$KWOK_VERSION"
  done
}

build_etcd
build_kwok
build_kube
echo "$BIN"
