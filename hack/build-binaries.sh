#!/usr/bin/env bash
# Builds the real components the end-to-end tests run, from the Go module proxy only, into a
# cache folder keyed by version. A warm run (binaries present) does nothing.
#
#   hack/build-binaries.sh [all|controlplane|controllers|matrix|next|previous|main|helm|k8s|etcd|kwok|kueue|kueue-next|coscheduling|krew]...
#   (default: all)
#
#   controlplane = k8s (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) + etcd
#                  + kwok (KWOK's controller: the fake nodes and pod lifecycles of the e2e world)
#   controllers  = Kubeflow Trainer's and JobSet's managers (the default cell's, each its own module)
#   matrix       = the version matrix's other cells: next (k8s + etcd of K8S_NEXT_VERSION),
#                  previous (Trainer's previous release with its JobSet), main (Trainer's main
#                  line, vendored in upstream/) and kueue-next (the next Kubernetes' Kueue)
#   helm         = Helm 3 and Helm 4 (the chart's tests)
#   kueue        = Kueue's manager KUEUE_VERSION (its own module: it pins older Trainer and JobSet APIs)
#   kueue-next   = Kueue's manager KUEUE_NEXT_VERSION (the k8s K8S_NEXT_VERSION cells'; a module of its own too)
#   coscheduling = scheduler-plugins' kube-scheduler (Coscheduling plugin) and its PodGroup CRD
#   krew         = krew (installs the kubectl plugin's archives from its manifest in test/release/)
#
# Env: TJW_BIN_CACHE (default ~/.cache/trainjob-webhook/bin), TJW_BUILD_SERIAL=1 to build one
# component at a time (on 2 cores parallel builds mostly overlap downloads with compiling).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_ROOT="$(cd "$HACK_DIR/.." && pwd)"
# shellcheck source=versions.env
source "$HACK_DIR/versions.env"

CACHE="${TJW_BIN_CACHE:-$HOME/.cache/trainjob-webhook/bin}"
K8S_DIR="$CACHE/k8s-$K8S_VERSION"
ETCD_DIR="$CACHE/etcd-$ETCD_VERSION"
KWOK_DIR="$CACHE/kwok-$KWOK_VERSION"
KREW_DIR="$CACHE/krew-$KREW_VERSION"
COSCHED_DIR="$CACHE/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION"
LOG_DIR="$CACHE/logs"
# The staging modules (k8s.io/api, ...) are released as v0.X.Y for k8s v1.X.Y.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

# Wrapper modules must not see a surrounding workspace, must be allowed to write go.mod/go.sum,
# and must use the installed Go rather than download a toolchain.
export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local
BUILD_FLAGS=(-trimpath)
LDFLAGS_BASE="-s -w"

log() { echo "[build] $*"; }

have_all() { # dir binary... -> true when every binary is present and executable
  local dir=$1; shift
  local b
  for b in "$@"; do [[ -x "$dir/$b" ]] || return 1; done
}

# run_step NAME LOGFILE CMD...: runs CMD with output to LOGFILE, printing a heartbeat every
# 60 s so a long cold build shows it is alive; on failure prints the log's tail.
run_step() {
  local name=$1 logfile=$2; shift 2
  "$@" >>"$logfile" 2>&1 &
  local pid=$! start=$SECONDS next=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    if (( SECONDS >= next )) && kill -0 "$pid" 2>/dev/null; then
      log "$name: still running ($((SECONDS - start))s)"
      next=$((SECONDS + 60))
    fi
  done
  if ! wait "$pid"; then
    log "$name: FAILED; last lines of $logfile:"
    tail -n 40 "$logfile" | sed 's/^/    /'
    return 1
  fi
}

# new_wrapper NAME: a throwaway module folder, printed on stdout. Leftovers of an interrupted
# run of the same component are removed first (the caller holds that component's lock).
new_wrapper() {
  mkdir -p "$CACHE/.work"
  rm -rf "$CACHE/.work/$1".*
  local dir
  dir="$(mktemp -d "$CACHE/.work/$1.XXXXXX")"
  (cd "$dir" && go mod init "tjw.local/$1" >/dev/null 2>&1)
  echo "$dir"
}

# install_binaries SRC DEST NAME...: moves freshly built binaries into place, each with an
# atomic rename on the same file system, so an interrupted build never leaves half a binary.
install_binaries() {
  local src=$1 dest=$2; shift 2
  mkdir -p "$dest"
  local b
  for b in "$@"; do
    mv -f "$src/$b" "$dest/.$b.tmp.$$"
    mv -f "$dest/.$b.tmp.$$" "$dest/$b"
  done
}

# with_lock NAME CMD...: serializes concurrent runs of this script on the same component.
with_lock() {
  local name=$1; shift
  mkdir -p "$CACHE"
  if command -v flock >/dev/null; then
    ( flock 9; "$@" ) 9>"$CACHE/.lock-$name"
  else
    "$@"
  fi
}

K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

build_k8s() {
  local label="${K8S_BINS[*]}"; label="${label// //} $K8S_VERSION"
  if have_all "$K8S_DIR" "${K8S_BINS[@]}"; then log "$label: cached in $K8S_DIR"; return; fi
  # Only what is missing (a cache made before kube-scheduler joined keeps its other binaries).
  local bins=() b
  for b in "${K8S_BINS[@]}"; do [[ -x "$K8S_DIR/$b" ]] || bins+=("$b"); done
  label="${bins[*]}"; label="${label// //} $K8S_VERSION"
  local t0=$SECONDS logfile="$LOG_DIR/k8s-$K8S_VERSION.log" dir
  : >"$logfile"
  dir="$(new_wrapper "k8s-$K8S_VERSION")"
  log "$label: downloading modules... (log: $logfile)"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
  # ./staging/src/...; a replace in a dependency is ignored, so the wrapper replaces every
  # staging module (listed in that version's own go.mod) with its published release.
  local info gomod time
  info="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION")"
  gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
  time="$(sed -n 's/^[[:space:]]*"Time": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
  local staging
  staging="$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$gomod")"
  [[ -n "$staging" ]] || { log "$label: no staging modules found in $gomod"; return 1; }
  local edits=(-require="k8s.io/kubernetes@$K8S_VERSION") m
  for m in $staging; do edits+=(-replace="$m=$m@$STAGING_VERSION"); done
  (cd "$dir" && go mod edit "${edits[@]}")
  local pkgs=()
  for b in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  # go list -deps resolves and downloads exactly the modules these commands need.
  run_step "$label" "$logfile" bash -c "cd '$dir' && go list -deps ${pkgs[*]} >/dev/null"
  log "$label: building ($((SECONDS - t0))s so far)"
  # Stamp the version the way the Kubernetes release build does (hack/lib/version.sh), so
  # /version and `kubectl version` report v1.35.x rather than v0.0.0-master.
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local x="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=$time"
  done
  run_step "$label" "$logfile" bash -c "cd '$dir' && go build ${BUILD_FLAGS[*]} -ldflags='$LDFLAGS_BASE$x' -o '$dir/out/' ${pkgs[*]}"
  install_binaries "$dir/out" "$K8S_DIR" "${bins[@]}"
  rm -rf "$dir"
  log "$label: done in $((SECONDS - t0))s"
}

# The server module's root package is etcd's main (main.go calls etcdmain.Main).
build_etcd() { build_tool "$ETCD_DIR" etcd go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 "$ETCD_VERSION"; }

# The harness registers the upstream webhooks from the upstream manifests (paths, rules and
# the kustomize patches that add object selectors), so they are kept beside the binaries:
# the tests must not need Go or a module cache once the binaries exist.
# copy_webhook_manifests DEST FILE...: copies upstream files into DEST/manifests atomically.
copy_webhook_manifests() {
  local dest=$1; shift
  local tmp
  mkdir -p "$dest"
  tmp="$(mktemp -d "$dest/.manifests.XXXXXX")"
  mkdir -p "$tmp/patches"
  local f
  for f in "$@"; do
    case "$f" in */patches/*) cp "$f" "$tmp/patches/" ;; *) cp "$f" "$tmp/" ;; esac
  done
  rmdir "$tmp/patches" 2>/dev/null || true
  chmod -R u+w,go+rX "$tmp" # module-cache files are read-only; mktemp -d is 0700
  rm -rf "$dest/manifests"; mv "$tmp" "$dest/manifests"
}

module_dir() { # module@version -> its folder in the module cache (downloaded when absent)
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}

# Each manager is built in a module of its own, as upstream builds it: in one module MVS would
# pair them on the newer of each dependency (JobSet v0.11 does not compile against the
# controller-runtime Trainer v2.3.0's dependencies pull in).
# build_manager LABEL DIR BINARY PKG LOGFILE [go mod edit flags...]
build_manager() {
  local label=$1 dest=$2 bin=$3 pkg=$4 logfile=$5; shift 5
  local t0=$SECONDS dir
  : >"$logfile"
  dir="$(new_wrapper "$(basename "$dest")")"
  log "$label: downloading modules... (log: $logfile)"
  # Every step checked by hand: callers run this on the left of `||`, where `set -e` is off.
  (cd "$dir" && go mod edit "$@") || return 1
  run_step "$label" "$logfile" bash -c "cd '$dir' && go list -deps $pkg >/dev/null" || return 1
  log "$label: building ($((SECONDS - t0))s so far)"
  run_step "$label" "$logfile" bash -c "cd '$dir' && go build ${BUILD_FLAGS[*]} -ldflags='$LDFLAGS_BASE${MANAGER_LDFLAGS:-}' -o '$dir/out/$bin' $pkg" || return 1
  install_binaries "$dir/out" "$dest" "$bin" || return 1
  rm -rf "$dir"
  log "$label: done in $((SECONDS - t0))s"
}

# build_tool DIR BINARY PKG MODULE VERSION: one binary, PKG of MODULE@VERSION, in DIR unless it is
# there already (built by build_manager in a module of its own; its log: DIR's name.log).
build_tool() {
  local dest=$1 bin=$2 pkg=$3 module=$4 v=$5 label="$2 $5"
  if have_all "$dest" "$bin"; then log "$label: cached in $dest"; return; fi
  build_manager "$label" "$dest" "$bin" "$pkg" "$LOG_DIR/$(basename "$dest").log" -require="$module@$v"
}

# build_jobset VERSION: JobSet's manager and its webhook manifests, in $CACHE/jobset-VERSION.
build_jobset() {
  local v=$1 dest="$CACHE/jobset-$1" label="jobset-controller-manager $1"
  if have_all "$dest" jobset-controller-manager && [[ -f "$dest/manifests/manifests.yaml" ]]; then
    log "$label: cached in $dest"; return
  fi
  mkdir -p "$dest"
  if ! have_all "$dest" jobset-controller-manager; then
    build_manager "$label" "$dest" jobset-controller-manager sigs.k8s.io/jobset "$LOG_DIR/jobset-$v.log" \
      -require="sigs.k8s.io/jobset@$v" || return 1
  fi
  local src; src="$(cd "$dest" && GOFLAGS= module_dir "sigs.k8s.io/jobset@$v")"
  [[ -d "$src" ]] || { log "$label: sigs.k8s.io/jobset@$v is not in the module cache"; return 1; }
  copy_webhook_manifests "$dest" "$src"/config/components/webhook/{manifests.yaml,kustomization.yaml} \
    "$src"/config/components/webhook/patches/*.yaml
}

# build_trainer VERSION: Trainer's manager and its webhook manifests, in $CACHE/trainer-VERSION.
# VERSION `main` is the vendored main-line tree (upstream/trainer-main-*, SOURCES.md), replaced
# in for a pseudo-version of its commit.
build_trainer() {
  local v=$1 dest="$CACHE/trainer-$1" label="trainer-controller-manager $1"
  local pkg=github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager src edits
  if [[ "$v" == main ]]; then
    src="$PROJECT_ROOT/upstream/trainer-main-${TRAINER_MAIN_COMMIT:0:8}"
    dest="$CACHE/trainer-main-${TRAINER_MAIN_COMMIT:0:8}"; label="trainer-controller-manager main@${TRAINER_MAIN_COMMIT:0:8}"
    [[ -f "$src/go.mod" ]] || { log "$label: $src/go.mod is missing"; return 1; }
    edits=(-require="github.com/kubeflow/trainer/v2@$TRAINER_MAIN_PSEUDO_VERSION" -replace="github.com/kubeflow/trainer/v2=$src")
  else
    edits=(-require="github.com/kubeflow/trainer/v2@$v")
  fi
  if have_all "$dest" trainer-controller-manager && [[ -f "$dest/manifests/manifests.yaml" ]]; then
    log "$label: cached in $dest"; return
  fi
  mkdir -p "$dest"
  if ! have_all "$dest" trainer-controller-manager; then
    build_manager "$label" "$dest" trainer-controller-manager "$pkg" "$LOG_DIR/$(basename "$dest").log" "${edits[@]}" || return 1
  fi
  [[ "$v" == main ]] || src="$(cd "$dest" && GOFLAGS= module_dir "github.com/kubeflow/trainer/v2@$v")"
  [[ -d "$src" ]] || { log "$label: its source is not in the module cache"; return 1; }
  copy_webhook_manifests "$dest" "$src"/manifests/base/webhook/{manifests.yaml,kustomization.yaml,patch_mutating.yaml,patch_validating.yaml}
}

# The default cell's managers.
build_controllers() {
  build_trainer "$TRAINER_VERSION" || return 1
  build_jobset "$JOBSET_VERSION" || return 1
}

# The version matrix's other cells (test/compat/), in three components so that each test waits
# only for what it runs: `next` is Kubernetes K8S_NEXT_VERSION with its etcd, `previous` Trainer's
# previous release with the JobSet its go.mod requires, `main` Trainer's main line (its JobSet is
# the default cell's, from `controllers`). `matrix` is the three.
build_next() {
  ( K8S_VERSION=$K8S_NEXT_VERSION; K8S_DIR="$CACHE/k8s-$K8S_VERSION"; STAGING_VERSION="v0.${K8S_VERSION#v1.}"; build_k8s ) &
  local a=$!
  ( ETCD_VERSION=$ETCD_NEXT_VERSION; ETCD_DIR="$CACHE/etcd-$ETCD_VERSION"; build_etcd ) &
  local b=$! failed=0
  wait "$a" || failed=1; wait "$b" || failed=1
  return "$failed"
}
build_previous() {
  build_trainer "$TRAINER_PREVIOUS_VERSION" || return 1
  build_jobset "$JOBSET_PREVIOUS_VERSION" || return 1
}
build_main() { build_trainer main; }

# build_helm: Helm 3 and Helm 4 (the chart's tests render with both; upgrades are tried with both).
build_helm() {
  local major v
  for major in 3 4; do
    if [[ $major == 3 ]]; then v=$HELM3_VERSION; else v=$HELM4_VERSION; fi
    local dest="$CACHE/helm-$v-stamped"
    if have_all "$dest" helm; then log "helm $v: cached in $dest"; continue; fi
    # Stamped as upstream's Makefile does: internal/version, so `helm version` names it, and (Helm 3)
    # the Kubernetes version `helm template` assumes, from the client-go its go.mod requires (its
    # Makefile's K8S_MODULES_*; unstamped, Helm 3 assumes v1.20). Helm 4 reads it from its build info.
    local x=" -X helm.sh/helm/v$major/internal/version.version=$v -X helm.sh/helm/v$major/internal/version.gitTreeState=clean"
    if [[ $major == 3 ]]; then
      local src client minor
      src="$(GOFLAGS= module_dir "helm.sh/helm/v3@$v")"
      client="$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$src/go.mod")"
      [[ -n "$client" ]] || { log "helm $v: no k8s.io/client-go in $src/go.mod"; return 1; }
      for p in pkg/lint/rules pkg/chartutil; do
        x+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$client"
      done
    fi
    MANAGER_LDFLAGS="$x" build_manager "helm $v" "$dest" helm "helm.sh/helm/v$major/cmd/helm" "$LOG_DIR/helm-$v.log" \
      -require="helm.sh/helm/v$major@$v" || return 1
  done
}

build_kwok() { build_tool "$KWOK_DIR" kwok sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok "$KWOK_VERSION"; }

build_krew() { build_tool "$KREW_DIR" krew sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew "$KREW_VERSION"; }

# Kueue gets a wrapper of its own, one per version: each requires older Trainer and JobSet APIs
# than the default cell's (v0.17.1: Trainer v2.2.0's and JobSet v0.11.1's; v0.19.2: v2.2.1's and
# v0.12.0's), and in the controllers' module MVS would move it onto v2.3.0's, a pairing upstream
# never built. Neither version's go.mod has replace directives, so requiring it alone builds exactly
# its go.mod's versions. Its CRDs and webhook manifests are vendored in upstream/kueue-VERSION/
# (SOURCES.md), not kept here.
# build_kueue_version VERSION: Kueue's manager in $CACHE/kueue-VERSION.
build_kueue_version() {
  local v=$1
  # Stamped as upstream's Makefile does, so its start-up log names the version.
  MANAGER_LDFLAGS=" -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v" \
    build_tool "$CACHE/kueue-$v" kueue sigs.k8s.io/kueue/cmd/kueue sigs.k8s.io/kueue "$v"
}
build_kueue() { build_kueue_version "$KUEUE_VERSION"; }
build_kueue-next() { build_kueue_version "$KUEUE_NEXT_VERSION"; }

# scheduler-plugins' scheduler (kube-scheduler with its out-of-tree plugins, Coscheduling among
# them) in a wrapper of its own. Its go.mod replaces every k8s.io staging module (and
# k8s.io/kubernetes) with a release; a replace in a dependency is ignored, so the wrapper copies
# them (one per line: `replace (` block entries and single `replace A => B v` lines). The
# PodGroup CRD it schedules by is kept beside the binary, so the tests need no module cache.
build_coscheduling() {
  local label="scheduler-plugins $SCHEDULER_PLUGINS_VERSION"
  if have_all "$COSCHED_DIR" kube-scheduler && [[ -f "$COSCHED_DIR/manifests/podgroups.yaml" ]]; then
    log "$label: cached in $COSCHED_DIR"; return
  fi
  local t0=$SECONDS logfile="$LOG_DIR/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION.log" dir info src
  : >"$logfile"
  dir="$(new_wrapper "scheduler-plugins-$SCHEDULER_PLUGINS_VERSION")"
  log "$label: downloading modules... (log: $logfile)"
  info="$(cd "$dir" && go mod download -json "sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION")"
  src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
  local edits=(-require="sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION") r
  for r in $(sed -n 's#^\(replace\)\{0,1\}[[:space:]]*\([^[:space:]()]\{1,\}\)[[:space:]]*=>[[:space:]]*\([^[:space:]]\{1,\}\)[[:space:]]\{1,\}\(v[^[:space:]]\{1,\}\)[[:space:]]*$#\2=\3@\4#p' "$src/go.mod"); do
    edits+=(-replace="$r")
  done
  (( ${#edits[@]} > 1 )) || { log "$label: no replace directives found in $src/go.mod"; return 1; }
  (cd "$dir" && go mod edit "${edits[@]}")
  local pkg=sigs.k8s.io/scheduler-plugins/cmd/scheduler
  run_step "$label" "$logfile" bash -c "cd '$dir' && go list -deps $pkg >/dev/null"
  log "$label: building ($((SECONDS - t0))s so far)"
  run_step "$label" "$logfile" bash -c "cd '$dir' && go build ${BUILD_FLAGS[*]} -ldflags='$LDFLAGS_BASE' -o '$dir/out/kube-scheduler' $pkg"
  mkdir -p "$dir/out/manifests"
  cp "$src/manifests/coscheduling/crd.yaml" "$dir/out/manifests/podgroups.yaml"
  chmod u+w,go+r "$dir/out/manifests/podgroups.yaml" # module-cache files are read-only
  mkdir -p "$COSCHED_DIR/manifests"
  mv -f "$dir/out/manifests/podgroups.yaml" "$COSCHED_DIR/manifests/.podgroups.yaml.tmp.$$"
  mv -f "$COSCHED_DIR/manifests/.podgroups.yaml.tmp.$$" "$COSCHED_DIR/manifests/podgroups.yaml"
  install_binaries "$dir/out" "$COSCHED_DIR" kube-scheduler
  rm -rf "$dir"
  log "$label: done in $((SECONDS - t0))s"
}

# cached_COMPONENT: true when everything the component builds is in the cache.
cached_k8s() { have_all "$K8S_DIR" "${K8S_BINS[@]}"; }
cached_etcd() { have_all "$ETCD_DIR" etcd; }
cached_kwok() { have_all "$KWOK_DIR" kwok; }
cached_krew() { have_all "$KREW_DIR" krew; }
cached_kueue() { have_all "$CACHE/kueue-$KUEUE_VERSION" kueue; }
cached_kueue-next() { have_all "$CACHE/kueue-$KUEUE_NEXT_VERSION" kueue; }
cached_coscheduling() { have_all "$COSCHED_DIR" kube-scheduler && [[ -f "$COSCHED_DIR/manifests/podgroups.yaml" ]]; }
cached_manager() { have_all "$CACHE/$1" "$2" && [[ -f "$CACHE/$1/manifests/manifests.yaml" ]]; }
cached_controllers() {
  cached_manager "trainer-$TRAINER_VERSION" trainer-controller-manager &&
    cached_manager "jobset-$JOBSET_VERSION" jobset-controller-manager
}
cached_next() { have_all "$CACHE/k8s-$K8S_NEXT_VERSION" "${K8S_BINS[@]}" && have_all "$CACHE/etcd-$ETCD_NEXT_VERSION" etcd; }
cached_previous() {
  cached_manager "trainer-$TRAINER_PREVIOUS_VERSION" trainer-controller-manager &&
    cached_manager "jobset-$JOBSET_PREVIOUS_VERSION" jobset-controller-manager
}
cached_main() { cached_manager "trainer-main-${TRAINER_MAIN_COMMIT:0:8}" trainer-controller-manager; }
cached_helm() { have_all "$CACHE/helm-$HELM3_VERSION-stamped" helm && have_all "$CACHE/helm-$HELM4_VERSION-stamped" helm; }

main() {
  local want=("$@")
  [[ ${#want[@]} -gt 0 ]] || want=(all)
  local jobs=() w
  for w in "${want[@]}"; do
    case "$w" in
      all) jobs+=(k8s etcd controllers kwok kueue coscheduling helm krew next previous main kueue-next) ;;
      controlplane) jobs+=(k8s etcd kwok) ;;
      matrix) jobs+=(next previous main kueue-next) ;;
      controllers|k8s|etcd|kwok|kueue|kueue-next|coscheduling|helm|krew|next|previous|main) jobs+=("$w") ;;
      -h|--help) sed -n '2,/^set /{/^set /!p}' "${BASH_SOURCE[0]}"; return 0 ;;
      *) echo "unknown component: $w (want all|controlplane|controllers|k8s|etcd|kwok|kueue|kueue-next|coscheduling|helm|krew|matrix|next|previous|main)" >&2; return 2 ;;
    esac
  done
  # Unique, in order.
  local uniq=() j
  for j in "${jobs[@]}"; do [[ " ${uniq[*]} " == *" $j "* ]] || uniq+=("$j"); done

  local missing=0
  for j in "${uniq[@]}"; do "cached_$j" || missing=1; done
  if (( missing )); then
    command -v go >/dev/null || { echo "[build] go is not installed: cannot build ${uniq[*]}" >&2; return 1; }
    mkdir -p "$LOG_DIR"
  fi

  # Each build runs as a background job even when serial: bash ignores `set -e` inside
  # anything called on the left of `||`, so `build_x || failed=1` would run on after errors.
  local t0=$SECONDS pids=() failed=0 p
  for j in "${uniq[@]}"; do
    with_lock "$j" "build_$j" &
    if [[ "${TJW_BUILD_SERIAL:-}" == 1 ]]; then wait $! || failed=1; else pids+=($!); fi
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done

  (( failed )) && { log "FAILED after $((SECONDS - t0))s"; return 1; }
  log "all requested binaries ready in $((SECONDS - t0))s in $CACHE: ${uniq[*]}"
}

main "$@"
