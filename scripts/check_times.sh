#!/usr/bin/env bash
# `cargo check` time after touching one file, for two commits of this
# repository, interleaved so both see the same machine load; prints each
# run and the median of the runs per commit and file.
#
#   scripts/check_times.sh OLD_COMMIT:FILE[,FILE...] NEW_COMMIT:FILE[,FILE...] [RUNS]
#
# e.g. scripts/check_times.sh dfc4ffe:src/mcp.rs,src/engine/db.rs \
#          HEAD:src/mcp/mod.rs,crates/xfile-engine/src/lib.rs 3
#
# Each commit is checked out in a worktree with its own target directory
# under $XFILE_CHECK_TIMES_DIR (default /tmp/xfile-check-times: outside the
# repository, whose workspace would claim it); the first check there is
# cold and not counted. Touching rewrites the file's modification time only.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 COMMIT:FILES COMMIT:FILES [RUNS]" >&2; exit 2; }
runs=${3:-3}
base="${XFILE_CHECK_TIMES_DIR:-/tmp/xfile-check-times}"
mkdir -p "$base"
declare -a trees files
for spec in "$1" "$2"; do
    commit=${spec%%:*}
    tree="$base/$(git rev-parse --short "$commit")"
    if [ ! -d "$tree/src" ]; then
        git worktree add --detach "$tree" "$commit" >/dev/null
    fi
    trees+=("$tree")
    files+=("${spec#*:}")
    (cd "$tree" && CARGO_TARGET_DIR="$tree/target" cargo check --quiet)
done
declare -A times
for run in $(seq "$runs"); do
    for i in 0 1; do
        IFS=, read -ra list <<< "${files[$i]}"
        for file in "${list[@]}"; do
            touch "${trees[$i]}/$file"
            start=$(date +%s.%N)
            (cd "${trees[$i]}" && CARGO_TARGET_DIR="${trees[$i]}/target" cargo check --quiet)
            seconds=$(echo "$(date +%s.%N) - $start" | bc)
            key="$(basename "${trees[$i]}") $file"
            times[$key]="${times[$key]:-} $seconds"
            printf 'run %d  %-10s %-40s %6.1f s\n' "$run" "$(basename "${trees[$i]}")" "$file" "$seconds"
        done
    done
done
for key in "${!times[@]}"; do
    median=$(printf '%s\n' ${times[$key]} | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf 'median  %-52s %6.1f s\n' "$key" "$median"
done | sort
