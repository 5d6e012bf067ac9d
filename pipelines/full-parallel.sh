#!/bin/sh
# full-parallel.sh — pipelines/full.mk with its shards spread over several
# hosts by GNU parallel over ssh.
#
#   HOSTS=gpu1,gpu2,gpu3 pipelines/full-parallel.sh SHARDS=12 THREADS=32 \
#       MODEL=models/qwen2.5-3b-q8_0.gguf JUDGE_MODEL=models/qwen2.5-7b-q8_0.gguf \
#       PROMPTS=data/prompts.jsonl FAMILY=qwen SEEDS=0-7 OUT=out/qwen
#   HOSTS_FILE=hosts.txt pipelines/full-parallel.sh SHARDS=12 ...
#   TRANSFER=1 HOSTS=gpu1,gpu2 pipelines/full-parallel.sh SHARDS=12 ...
#
# Run it from the top directory of asn. The arguments are full.mk's
# variables, passed unchanged to every make. HOSTS is a comma-separated list
# of sshlogins, HOSTS_FILE a file of them, one a line (GNU parallel's
# --sshlogin and --sshloginfile: "host", "user@host", "4/host" for 4 jobs
# at once there, "ssh -p 2222 user@host" for another ssh command; ":" is
# this host). JOBS_PER_HOST (default 1) shards run at once on each host
# whose login gives no count: give each THREADS = that host's cores /
# JOBS_PER_HOST. RETRIES (default 3): how many times a shard is tried, on
# another host when there is one. Hosts that do not answer ssh at the start
# are left out (with a warning).
#
# Assumed: every host logs in by ssh without a password and has make; with
# a shared filesystem (the default), every host sees this directory (bin/
# built for its CPUs), the models, the prompts and OUT at the same path, and
# the hosts' clocks agree (NTP: make compares the files' times across
# hosts). Without one, TRANSFER=1: rsync copies the programs in bin/, the
# models, the prompts and the prepared heuristics and n-gram index
# (`make ... shard-inputs` lists them; their paths must be relative, under
# this directory, and bin/ built for the hosts' CPUs) into REMOTE_DIR
# (default asn-run, under the login directory) on each host, the same paths
# under it, and copies each finished shard's folder back; the hosts need
# rsync too, and TRANSFER=1 takes PROMPTS, not SOURCES.
#
# Steps: (1) `make prepare` here: the heuristics and the n-gram index every
# shard reads, once; (2) one `make shard-K` per shard, on the hosts; a job
# that fails (a host that goes down, a process killed) is retried, and make
# resumes it where it stopped; (3) only when every shard succeeded, `make`
# here: merges the shards, filters, indexes and reports (the shards are up
# to date, so nothing is regenerated). A shard step writes a temporary name
# and renames it when complete, and rsync does the same when copying back,
# so the merge never reads part of a file. Rerunning the script after an
# interruption redoes only what is missing. The job log is
# OUT/parallel.joblog.
set -eu

shards=1 out=out/full sources=
for a in "$@"; do
    case $a in
        SHARDS=*) shards=${a#SHARDS=} ;;
        OUT=*) out=${a#OUT=} ;;
        SOURCES=?*) sources=1 ;;
    esac
done
if [ -n "${HOSTS_FILE:-}" ]; then
    hosts_opt=--sshloginfile hosts_val=$HOSTS_FILE
elif [ -n "${HOSTS:-}" ]; then
    hosts_opt=--sshlogin hosts_val=$HOSTS
else
    echo "full-parallel.sh: set HOSTS (host1,host2,...) or HOSTS_FILE" >&2
    exit 2
fi

# 0. what this needs here, and on each host, said by name (not "command not found", exit 127)
need=
for p in parallel make ssh; do command -v "$p" > /dev/null 2>&1 || need="$need $p"; done
[ "${TRANSFER:-0}" != 1 ] || command -v rsync > /dev/null 2>&1 || need="$need rsync"
if [ -n "$need" ]; then
    echo "full-parallel.sh: not found on this host:$need (Debian packages: parallel, make, openssh-client, rsync)" >&2
    exit 1
fi
# the programs of pipelines/full.mk (gen-heuristics only runs here, when there is no HEURISTICS)
progs="filter-topk gen-candidates index rank-bt report score-diversity score-ngram score-verifiable verify"
for b in $progs; do
    [ -x "bin/$b" ] || { echo "full-parallel.sh: bin/$b is missing here: build asn first (make)" >&2; exit 1; }
done
# on each host: make (and rsync with TRANSFER=1); without TRANSFER, this
# folder at the same path and its programs runnable there (built for its
# CPUs, its shared libraries installed). Each host prints what it lacks.
if [ "${TRANSFER:-0}" = 1 ]; then
    check='for p in make rsync; do command -v $p > /dev/null 2>&1 || printf " %s" $p; done'
else
    check="cd '$PWD' 2> /dev/null || { printf ' the folder %s (a shared filesystem, or TRANSFER=1)' '$PWD'; exit 0; }
        command -v make > /dev/null 2>&1 || printf ' make'
        for b in $progs; do bin/\$b --version > /dev/null 2>&1 || printf ' a runnable bin/%s' \$b; done"
fi
lacking=$(parallel --nonall --filter-hosts "$hosts_opt" "$hosts_val" --tag "$check" < /dev/null) || true
if [ -n "$lacking" ]; then
    printf '%s\n' "$lacking" | awk -F'\t' '{ sub(/^ */, "", $2); print "full-parallel.sh: host " $1 " lacks: " $2 }' >&2
    exit 1
fi

# 1. the shared inputs
make -f pipelines/full.mk "$@" prepare
mkdir -p "$out"

# 2. the shards that are not complete here (make -q), {} the shard number. The command's words are quoted
# here (values with blanks stay whole) rather than with parallel -q, which
# breaks --filter-hosts (GNU parallel 20221122).
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
cmd="make -f pipelines/full.mk"
for a in "$@"; do cmd="$cmd $(quote "$a")"; done
todo() { for k in $(seq 1 "$shards"); do make -q -f pipelines/full.mk "$@" "shard-$k" || echo "$k"; done; }
if [ "${TRANSFER:-0}" = 1 ]; then
    [ -z "$sources" ] || { echo "full-parallel.sh: TRANSFER=1 takes PROMPTS, not SOURCES" >&2; exit 2; }
    # the files a shard reads (make's paths have no blanks: split on them),
    # then, after "--", the variables that point its make at the prepared files
    basefiles= vars=
    for f in $(make -s -f pipelines/full.mk "$@" shard-inputs); do
        if [ "$f" = -- ]; then vars=" "; continue; fi
        if [ -n "$vars" ]; then vars="$vars $f"; continue; fi
        case $f in
            /* | ../* | */../* | ..)
                echo "full-parallel.sh: TRANSFER=1 copies files by their path under this directory, which $f is not" >&2
                exit 2 ;;
        esac
        [ -e "$f" ] || { echo "full-parallel.sh: $f: no such file" >&2; exit 2; }
        basefiles="$basefiles --basefile $f"
    done
    # rsync -t: the copies keep their times, so each make sees its inputs
    # older than what it builds, and the final make the shards up to date
    # shellcheck disable=SC2086
    todo "$@" | PARALLEL_RSYNC_OPTS=-rlDzRt parallel --filter-hosts "$hosts_opt" "$hosts_val" \
        --workdir "${REMOTE_DIR:-asn-run}" $basefiles --return "$out/shards/{}-of-$shards" \
        -j "${JOBS_PER_HOST:-1}" --retries "${RETRIES:-3}" --halt soon,fail=1 \
        --joblog "$out/parallel.joblog" --tag --line-buffer \
        "$cmd $vars shard-{}"
else
    todo "$@" | parallel --filter-hosts "$hosts_opt" "$hosts_val" --workdir "$PWD" \
        -j "${JOBS_PER_HOST:-1}" --retries "${RETRIES:-3}" --halt soon,fail=1 \
        --joblog "$out/parallel.joblog" --tag --line-buffer \
        "$cmd shard-{}"
fi

# 3. the merge and everything after it
make -f pipelines/full.mk "$@"
