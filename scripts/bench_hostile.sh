#!/usr/bin/env bash
# Time and peak memory of xfile on hostile inputs that once crashed or stalled it: deep
# chains, an import ring, one very long line. Each input is generated in a
# scratch directory; every binary given runs on every input, interleaved,
# so binaries built before and after a change compare in the same session.
#
#   scripts/bench_hostile.sh OLD_BINARY NEW_BINARY [...]
#
# Prints one line per input and binary: seconds, peak RSS and exit status
# (134 is an abort, such as a stack overflow; 124 a timeout after 120 s).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY ...]" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# make NAME PYTHON: a tree with m.py written by PYTHON and main.py importing it.
make() {
    mkdir -p "$scratch/$1"
    python3 -c "$2" "$scratch/$1"
    echo "import m" > "$scratch/$1/main.py"
}
make attr-35k   'import sys; open(sys.argv[1] + "/m.py", "w").write("x = a" + ".b" * 35000 + "\n")'
make attr-200k  'import sys; open(sys.argv[1] + "/m.py", "w").write("x = a" + ".b" * 200000 + "\n")'
make call-2k    'import sys; open(sys.argv[1] + "/m.py", "w").write("x = a" + ".b()" * 2000 + "\n")'
make call-8k    'import sys; open(sys.argv[1] + "/m.py", "w").write("x = a" + ".b()" * 8000 + "\n")'
make parens-1m  'import sys; open(sys.argv[1] + "/m.py", "w").write("x = " + "(" * 10**6 + "a" + ")" * 10**6 + "\n")'
make line-8mb   'import sys; open(sys.argv[1] + "/m.py", "w").write("x = \"" + "y" * 8000000 + "\"\n")'
mkdir -p "$scratch/ring-5k"
python3 -c '
import sys
n = 5000
for i in range(n):
    open(f"{sys.argv[1]}/r{i}.py", "w").write(f"import r{(i + 1) % n}\n")
' "$scratch/ring-5k"

run() { # run LABEL BINARY ARGS...
    local label=$1 binary=$2
    shift 2
    local status=0
    /usr/bin/time -f "%e %M" -o "$scratch/time" timeout 120 "$binary" "$@" \
        >/dev/null 2>&1 || status=$?
    read -r seconds kb < <(tail -1 "$scratch/time" | grep -E '^[0-9.]+ [0-9]+$' || echo "- 0")
    printf '%-22s %-28s %6s s %7d MB  exit %d\n' "$label" "$(basename "$binary")" \
        "$seconds" $((kb / 1024)) "$status"
}

for input in attr-35k attr-200k call-2k call-8k parens-1m ring-5k; do
    for binary in "$@"; do
        rm -rf "$scratch/$input/.xfile_cache" "$scratch/$input/.cross_file_context_logs"
        run "index $input" "$binary" index --root "$scratch/$input" --no-cache
    done
done
for binary in "$@"; do
    run "read m.py attr-35k" "$binary" read m.py --root "$scratch/attr-35k" --no-cache
    run "read m.py line-8mb" "$binary" read m.py --root "$scratch/line-8mb" --no-cache
done
