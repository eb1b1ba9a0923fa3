#!/usr/bin/env bash
# Builds the benchmark's Go peer (bench/go-peer/: controller-runtime's webhook server and
# admission.Handler deciding on Trainer's typed API) from the Go module proxy only, into the
# same cache as hack/build-binaries.sh, keyed by a hash of its go.mod, go.sum and main.go.
# A warm run (binary present) does nothing and prints the binary's path on the last line.
#
#   hack/build-bench-peer.sh
#
# Env: TJW_BIN_CACHE (default ~/.cache/trainjob-webhook/bin). Exit 3 when Go is not installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/bench/go-peer"
CACHE="${TJW_BIN_CACHE:-$HOME/.cache/trainjob-webhook/bin}"
HASH="$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)"
DIR="$CACHE/bench-peer-$HASH"
BIN="$DIR/trainjob-webhook-bench-peer"

log() { echo "[build] $*" >&2; }

if [[ -x "$BIN" ]]; then log "bench peer: cached in $DIR"; echo "$BIN"; exit 0; fi
command -v go >/dev/null || { log "go is not installed: cannot build the bench peer"; exit 3; }

# Wrapper modules must not see a surrounding workspace and must use the installed Go.
export GOWORK=off GOFLAGS="-buildvcs=false" GOTOOLCHAIN=local
mkdir -p "$CACHE/.work" "$DIR"
exec 9>"$CACHE/.lock-bench-peer"
flock 9
if [[ -x "$BIN" ]]; then log "bench peer: cached in $DIR"; echo "$BIN"; exit 0; fi
WORK="$(mktemp -d "$CACHE/.work/bench-peer.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cp "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" "$WORK/"
t0=$SECONDS
log "bench peer: building (modules from the proxy when not in the module cache)"
(cd "$WORK" && go build -mod=readonly -trimpath -ldflags='-s -w' -o "$WORK/out/trainjob-webhook-bench-peer" .) >&2
mv -f "$WORK/out/trainjob-webhook-bench-peer" "$DIR/.peer.tmp.$$"
mv -f "$DIR/.peer.tmp.$$" "$BIN"
log "bench peer: done in $((SECONDS - t0))s"
echo "$BIN"
