#!/usr/bin/env bash
# Builds one `workloads` binary per variant into target/ablation/bin/<V>: the
# patch benches/ablation/<V>.patch applied to src/, built, src/ restored
# (V0 = no patch). Needs a clean src/. Usage: benches/ablation/build.sh V0 V1 ...
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
git diff --quiet -- src || { echo "src/ has changes: commit or stash them first" >&2; exit 1; }
mkdir -p target/ablation/bin
trap 'git checkout -q -- src' EXIT
for v in "$@"; do
    git checkout -q -- src
    if [ "$v" != V0 ]; then git apply "benches/ablation/$v.patch"; fi
    out=$(nice -n 19 cargo bench --bench workloads --no-run 2>&1) || { echo "$out" | tail -20 >&2; exit 1; }
    bin=$(echo "$out" | sed -n 's/.*Executable .*workloads\.rs (\(.*\))$/\1/p' | tail -1)
    cp "$bin" "target/ablation/bin/$v"
    echo "built $v"
done
