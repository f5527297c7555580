#!/usr/bin/env bash
# shellcheck disable=SC2317  # the corpus functions are called by name (${corpus}_cold)
# Answers diff: proof that a change meant to change no behaviour (moving
# modules between crates, say) leaves every answer of the CLI byte-identical.
# Runs a fixed list of commands with two xfile binaries on the same corpora
# and diffs each answer (stdout, stderr and exit status) byte for byte.
#
#   scripts/answers_diff.sh [--no-django | --fetch-django] [--full] BASE_BIN NEW_BIN
#
# Corpora: examples/sample_project, always; Django 5.2.8 from
# target/bench-data/django-5.2.8 when it is there (--fetch-django fetches it
# first with scripts/fetch_django.sh, XFILE_DJANGO_TREE=DIR uses another copy,
# --no-django skips it). Each binary gets its own copy of each corpus, since
# commands write their cache (.xfile_cache/) and logs
# (.cross_file_context_logs/) into the tree; the two binaries run side by side.
# In its copy each binary answers in two passes:
#   cold: every command with --no-cache;
#   warm: `index` writes the cache, then the commands again, reading it (the
#         warm cache is an answer path too: `deps` and `dependents` answer
#         from answers.bin without indexing), then `cache info`.
# After each pass the warning log is an answer too. On the sample every
# command answers in text and in --json in both passes, plus `explain --dump`
# of every file, `export --out` and the git commands (`impact`, `git
# log|diff|blame`) on a copy committed with fixed names and dates and edited.
# On Django every command that indexes costs 10-13 s of CPU in a debug
# build, so the quick run keeps to 15 of them per binary: the cold pass has
# the whole-project answers (index, export, warnings) and one `deps`, the
# warm pass the rest, one format each, text and JSON alternating (format and
# cache path are independent; the sample crosses them all), then `deps` and
# `dependents`, which answer from the cache at no cost, in both. --full adds
# more commands and runs every one in both formats (about three times as
# long).
#
# Prints one line per corpus, "N answers, all identical" or the commands
# whose answers differ, each with the head of its `diff -u`; exits 1 on any
# difference, 2 on a usage error. Run BASE_BIN against itself first: a
# difference there is nondeterminism, not a change. XFILE_ANSWERS_KEEP=1 keeps
# the scratch directory (every answer, per corpus, binary and pass) and
# prints its path. To see the script catch a difference,
# XFILE_ANSWERS_NEW_EDIT='shell command' runs in each of NEW_BIN's copies
# (working directory: the copy's root) before its commands, e.g.
#   XFILE_ANSWERS_NEW_EDIT="sed -i '/^import json/d' app/storage.py" \
#     scripts/answers_diff.sh --no-django BIN BIN
#
# Measured 2026-11-27, debug binaries (BASE against itself), on 2 cores
# shared with other builds (load average 6-7): sample, 217 answers in 70 s;
# Django, 27 answers in 6 min 26 s, about 170 s of CPU per binary (so near
# 3 min when the two cores are free).
set -euo pipefail

usage() {
    echo "usage: $0 [--no-django | --fetch-django] [--full] BASE_BIN NEW_BIN" >&2
    exit 2
}
django=auto
full=0
while [ $# -gt 0 ]; do
    case $1 in
        --no-django) django=no ;;
        --fetch-django) django=fetch ;;
        --full) full=1 ;;
        -h | --help) usage ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) break ;;
    esac
    shift
done
[ $# -eq 2 ] || usage
for binary in "$1" "$2"; do
    [ -x "$binary" ] || { echo "$binary: not an executable" >&2; exit 2; }
done
base_bin=$(realpath "$1")
new_bin=$(realpath "$2")
cd "$(dirname "$0")/.."

scratch=$(mktemp -d "${TMPDIR:-/tmp}/answers-diff.XXXXXX")
scratch=$(realpath "$scratch")
if [ "${XFILE_ANSWERS_KEEP:-0}" = 1 ]; then
    echo "answers kept in $scratch" >&2
else
    trap 'rm -rf "$scratch"' EXIT
fi

# The scratch directory of one corpus and binary, and the tree being asked
# (set by run_side and the sections below; `answer` reads them).
side=
which=
bin=
source=
tree=
pass=
answers=
n=0

# mask SUBCOMMAND: the answer on stdin with what legitimately differs from
# run to run replaced by `#`; each mask says why.
mask() {
    local root side_re
    # Each binary has its own copy of the corpus (and its own scratch
    # directory for `explain --dump` and `export --out`): their paths differ.
    root=$(printf '%s' "$tree" | sed 's/[][\.*^$|]/\\&/g')
    side_re=$(printf '%s' "$side" | sed 's/[][\.*^$|]/\\&/g')
    local script="s|$root|<ROOT>|g; s|$side_re|<SCRATCH>|g"
    case $1 in
        # Timings: the wall time and its phases in `index`'s summary (text
        # and JSON) are measured, so they vary with the machine's load.
        index) script="$script"'
            /^  wall time: /s/[0-9]+(\.[0-9]+)?/#/g
            s/^(  +"[a-z_]+_ms": )[0-9.eE+-]+/\1#/' ;;
        # `export` stamps its metadata with the time it ran (the first
        # "timestamp"; the files' last_modified are their mtimes, which the
        # copies keep).
        export) script="$script"'
            0,/^    "timestamp": "[^"]*"/s//    "timestamp": "#"/' ;;
        # search --json: how long the search took, and when each related
        # section was loaded (ms since the epoch).
        search) script="$script"'
            s/^(  "searchTimeMs": )[0-9.eE+-]+/\1#/
            s/^( *"loadedAt": )[0-9]+/\1#/' ;;
        # The warning log stamps each record with the time it was written.
        log) script="$script"'
            s/"timestamp":"[^"]*"/"timestamp":"#"/g' ;;
    esac
    sed -E "$script"
}

# record LABEL SUBCOMMAND: the raw answer in $answers/raw, masked, becomes
# the next numbered answer.
record() {
    n=$((n + 1))
    local file
    file=$(printf '%s/%03d' "$answers" "$n")
    mask "$2" <"$answers/raw" >"$file"
    rm -f "$answers/raw"
    # (the label may name a path in the scratch directory)
    printf '%03d\t%s\n' "$n" "${1//"$side"/<SCRATCH>}" >>"$answers/list"
}

# answer ARGS...: `xfile ARGS` in the tree (its root as the working
# directory too, so FILE arguments read the same either way), with
# --no-cache in the cold pass; stdout, stderr and exit status make one
# answer. Files written under $side/written by the command are part of it.
# A command that hangs is stopped after 10 minutes (exit 124 in its answer).
answer() {
    local flags=() status=0
    [ "$pass" = cold ] && flags=(--no-cache)
    rm -rf "$side/written"
    mkdir -p "$side/written"
    (cd "$tree" && exec timeout 600 "$bin" --root "$tree" "${flags[@]}" "$@") \
        >"$answers/raw" 2>"$answers/err" || status=$?
    {
        if [ -s "$answers/err" ]; then
            echo "--- stderr"
            cat "$answers/err"
        fi
        echo "--- exit $status"
        find "$side/written" -type f | LC_ALL=C sort | while read -r written; do
            echo "--- file ${written#"$side/written/"}"
            cat "$written"
        done
    } >>"$answers/raw"
    local sub=$1
    [ "$1" = --json ] && sub=$2
    record "$pass: xfile ${flags[*]:+${flags[*]} }$*" "$sub"
}

# ask FORMAT ARGS...: `xfile ARGS` in text, --json or both; on the sample,
# and with --full, always both. FORMAT `more`: both, but only with --full.
ask() {
    local format=$1
    shift
    [ "$format" = more ] && [ "$full" = 0 ] && return
    [ "$all_formats" = 1 ] && format=both
    case $format in
        text) answer "$@" ;;
        json) answer --json "$@" ;;
        both | more) answer "$@"; answer --json "$@" ;;
    esac
}

# log: what the passes so far wrote to the tree's warning log, as an answer.
log() {
    local logs=$tree/.cross_file_context_logs
    find "$logs" -type f 2>/dev/null | LC_ALL=C sort | while read -r file; do
        echo "--- ${file#"$tree/"}"
        cat "$file"
    done >"$answers/raw"
    record "$pass: the warning log, .cross_file_context_logs/" log
}

sample_commands() {
    ask both index
    ask both export
    ask both deps app/bot.py
    ask both deps app/models.py
    ask both deps app/utils/__init__.py
    ask both deps /nonexistent/outside.py
    ask both dependents app/models.py
    ask both dependents app/utils/retry.py
    ask both dependents app/bot.py --symbol EchoBot
    ask both dependents app/models.py --symbol User.save
    ask both dependents app/models.py --symbol Nope
    ask both callers User.save
    ask both callers app/storage.py::Storage.put --depth 3
    ask both callers app.bot.EchoBot.handle --depth 2 --limit 2
    ask both callers retry_with_backoff
    ask both callers handle
    ask both callees EchoBot.handle --depth 2
    ask both callees app/handlers.py::on_message
    ask both callees AdminBot.handle
    ask both outline app/bot.py
    ask both outline app/models.py
    ask both outline app/utils/__init__.py
    ask both show AdminBot
    ask both show app/models.py::User.save
    ask both show app.utils.retry.retry_with_backoff
    ask both show Nope
    ask both search User.save
    ask both search retri --expand all
    ask both search Stroage
    ask both search 'get user'
    ask both search storage --context-file app/bot.py --max-clusters 2 --expand callers,type-family
    ask both query 'Imports("app/bot.py", _, _)'
    ask both query 'DependsOn(_, _)'
    ask both query 'Calls(_, _, "app/models.py", _)'
    ask both query 'Inherits(_, _, _, _)'
    ask both query 'InCycle(_)'
    ask both query 'TestCovers(_, _)'
    ask both query 'Nope(_)'
    ask both explain 'DependsOn("app/bot.py", _)'
    ask both explain 'Calls("app/bot.py", _, "app/utils/retry.py", _)'
    ask both explain 'DependsOn("app/models.py", "app/bot.py")'
    ask both read app/bot.py
    ask both read app/admin.py --import-depth 2 --show-available
    ask both read app/bot.py --start-line 12 --end-line 16
    ask both warnings
    ask both warnings app/bot.py
    ask both warnings app/models.py
}

sample_cold() {
    sample_commands
    ask both explain --dump "$side/written"
    ask both export --out "$side/written/graph.json"
}

sample_warm() {
    sample_commands
}

# The git commands need a repository: the copy committed twice, with fixed
# names and dates (so the commit ids are the same for both binaries, and
# too old for search's recency boost), then one edit in the working tree.
sample_git() {
    local commit=(git -c init.defaultBranch=main -c commit.gpgsign=false)
    (
        cd "$tree"
        export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 \
            GIT_AUTHOR_NAME=Sample GIT_AUTHOR_EMAIL=sample@example.invalid \
            GIT_COMMITTER_NAME=Sample GIT_COMMITTER_EMAIL=sample@example.invalid \
            GIT_AUTHOR_DATE=2020-01-01T00:00:00Z GIT_COMMITTER_DATE=2020-01-01T00:00:00Z
        "${commit[@]}" init -q
        "${commit[@]}" add -A
        "${commit[@]}" commit -q -m "The sample project"
        printf '\n    def clear(self):\n        self.rows.clear()\n' >>app/storage.py
        export GIT_AUTHOR_DATE=2020-01-02T00:00:00Z GIT_COMMITTER_DATE=2020-01-02T00:00:00Z
        "${commit[@]}" commit -q -a -m "Storage.clear"
        sed -i 's/^        storage.put(self)$/&\n        return self/' app/models.py
    )
    pass=cold
    ask both impact
    ask both impact --base HEAD~1 --depth 1
    ask both git log
    ask both git log app/storage.py --limit 1
    ask both git diff
    ask both git diff --base HEAD~1 --head HEAD
    ask both git blame app/models.py
    ask both git blame app/storage.py --start-line 10 --end-line 20
    # warm: the first blame keeps the file's blame in the cache, the second
    # answers from it.
    pass=warm
    ask both git blame app/storage.py
    ask both git blame app/storage.py
}

django_cold() {
    ask json index
    ask text export
    ask json warnings
    ask text deps django/db/models/query.py
    ask more dependents django/http/response.py --symbol HttpResponse
}

django_warm() {
    ask text callers QuerySet.filter
    ask json callers Model.save --depth 2
    ask text callers HttpResponse
    ask json callees QuerySet.filter --depth 2
    ask text outline django/db/models/query.py
    ask json show QuerySet.filter
    ask text search HttpRespnse
    ask more search QuerySet.filter
    ask text query 'Inherits(_, _, "django/http/response.py", _)'
    ask more query 'Imports("django/http/response.py", _, _)'
    ask text explain 'DependsOn("django/shortcuts.py", "django/http/response.py")'
    ask text read django/db/models/query.py
    ask more read django/http/response.py --start-line 365 --end-line 435 --import-depth 2
    ask more warnings django/db/models/base.py
    # Last, so that the cache holds answers.bin: these answer from it
    # without indexing (both formats: they cost nothing).
    ask both deps django/db/models/query.py
    ask both deps django/http/response.py
    ask both dependents django/db/models/query.py
    ask both dependents django/http/response.py --symbol HttpResponse
}

# copy NAME: a fresh copy of the corpus at $side/NAME/<its name> (cp -a
# keeps the mtimes that export reports) without the cache and logs an
# earlier run may have left in it, edited for NEW_BIN when asked.
copy() {
    tree=$side/$1/$(basename "$source")
    mkdir -p "$side/$1"
    cp -a "$source" "$tree"
    rm -rf "$tree/.xfile_cache" "$tree/.cross_file_context_logs"
    if [ "$which" = bin2 ] && [ -n "${XFILE_ANSWERS_NEW_EDIT:-}" ]; then
        (cd "$tree" && bash -c "$XFILE_ANSWERS_NEW_EDIT")
    fi
}

# run_side CORPUS SOURCE bin1|bin2 BINARY: copy SOURCE, then the corpus's
# passes.
run_side() {
    local corpus=$1
    source=$2
    which=$3
    bin=$4
    side=$scratch/$corpus/$which
    answers=$side/answers
    n=0
    mkdir -p "$answers"
    : >"$answers/list"
    copy tree
    pass=cold
    "${corpus}_cold"
    log
    pass="warm, writing the cache"
    answer index
    # The directories the first cached index changed must look settled (100
    # ms past) to the next one, which then writes answers.bin as well.
    sleep 1
    pass=warm
    "${corpus}_warm"
    ask both cache info
    log
    if [ "$corpus" = sample ] && command -v git >/dev/null; then
        copy git
        sample_git
    fi
}

# compare CORPUS SECONDS: the summary line, and the diffs; returns 1 on any
# difference.
compare() {
    local a=$scratch/$1/bin1/answers b=$scratch/$1/bin2/answers
    if ! cmp -s "$a/list" "$b/list"; then
        echo "$1: the two runs asked different commands (did one stop early?)"
        diff -u --label base --label new "$a/list" "$b/list" | head -n 20
        return 1
    fi
    local total differing=()
    total=$(wc -l <"$a/list")
    while IFS=$'\t' read -r number label; do
        cmp -s "$a/$number" "$b/$number" || differing+=("$number"$'\t'"$label")
    done <"$a/list"
    if [ ${#differing[@]} -eq 0 ]; then
        echo "$1: $total answers, all identical ($2 s)"
        return 0
    fi
    echo "$1: ${#differing[@]} of $total answers differ ($2 s):"
    local entry shown=0
    for entry in "${differing[@]}"; do
        echo "  ${entry#*$'\t'}"
        # The diffs of the first ten; the rest by name only.
        [ $((shown += 1)) -le 10 ] || continue
        diff -u --label base --label new "$a/${entry%%$'\t'*}" "$b/${entry%%$'\t'*}" |
            head -n 15 | sed 's/^/    /'
    done
    [ "$shown" -le 10 ] || echo "  (diffs of the first 10 shown; XFILE_ANSWERS_KEEP=1 keeps every answer)"
    return 1
}

# corpus NAME SOURCE: both binaries on their own copies, side by side.
corpus() {
    local started=$SECONDS pids=() failed=0
    all_formats=1
    [ "$1" = django ] && [ "$full" = 0 ] && all_formats=0
    run_side "$1" "$2" bin1 "$base_bin" &
    pids+=($!)
    run_side "$1" "$2" bin2 "$new_bin" &
    pids+=($!)
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    if [ "$failed" = 1 ]; then
        echo "$1: a run failed (see above)"
        return 1
    fi
    compare "$1" $((SECONDS - started))
}

status=0
corpus sample examples/sample_project || status=1

django_tree=${XFILE_DJANGO_TREE:-target/bench-data/django-5.2.8}
if [ "$django" = fetch ] && [ -z "${XFILE_DJANGO_TREE:-}" ]; then
    django_tree=$(scripts/fetch_django.sh)
fi
if [ "$django" = no ]; then
    :
elif [ -d "$django_tree" ]; then
    corpus django "$(realpath "$django_tree")" || status=1
else
    echo "django: skipped, no tree at $django_tree (--fetch-django fetches it)"
fi
exit "$status"
