#!/bin/sh
# Install the Debian packages asn needs, when any is missing.
#   scripts/install-deps.sh           to build and test (make runs it)
#   scripts/install-deps.sh cluster   to run pipelines/full.mk's shards on other
#                                     hosts: GNU parallel over ssh, or Slurm
#                                     (the cluster tests run it)
#   scripts/install-deps.sh oracle    optional: PyTorch, the reference of
#                                     tests/cli/sampler_torch.sh and
#                                     sampling_vectors.sh (skipped without
#                                     it); .ci/run installs it
#   scripts/install-deps.sh arm       make test-arm: the aarch64 cross
#                                     compiler and qemu; .ci/run installs it
#   scripts/install-deps.sh report    optional: headless Chromium, with which
#                                     tests/cli/report.sh checks how the report
#                                     renders at 1400 and 800 px (skipped
#                                     without it)
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -u

case ${1:-build} in
build)
    # Build: compiler libraries (libmicrohttpd: serve's HTTP server; libcurl:
    # the client of OpenAI-compatible servers). Tests: Python oracles (numpy,
    # jsonschema, yaml).
    PKGS="gcc make pkg-config libjansson-dev libyaml-dev libsqlite3-dev libopenblas-dev \
liblapacke-dev libssl-dev libpcre2-dev libmicrohttpd-dev libcurl4-openssl-dev python3 python3-numpy \
python3-jsonschema python3-yaml python3-jinja2 python3-tqdm" ;;
cluster)
    # pipelines/full-parallel.sh (parallel copies files with rsync over ssh)
    # and pipelines/slurm/ (the Slurm client commands and daemons, and munge,
    # which authenticates them); the tests start their own sshd and cluster.
    PKGS="make parallel rsync openssh-client openssh-server slurm-wlm slurm-client munge" ;;
oracle)
    PKGS="python3-torch python3-yaml python3-numpy" ;;
arm)
    PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static" ;;
report)
    # the browser that renders the report page in tests/cli/report.sh, and
    # the font the page names first
    PKGS="chromium fonts-dejavu-core" ;;
*)
    echo "usage: install-deps.sh [build|cluster|oracle|arm|report]" >&2
    exit 2 ;;
esac

missing=""
for p in $PKGS; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
    case "$st" in
        *"ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
    echo "asn: missing Debian packages; run as root:" >&2
    echo "  apt-get update && $cmd" >&2
    exit 1
fi
echo "asn: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# An old package list may lack current versions: update once, then install.
if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
        echo "asn: apt-get failed; try: apt-get update && $cmd" >&2
        exit 1
    }
fi
