#!/usr/bin/env bash
# run.sh DIR, on the bigger machine, in a copy of the repository: puts
# pack.sh's parts (DIR/NN/bundle.tar.xz.NN) together under BOX (default
# /opt/longhaul-benchbox: it must be readable by everyone, as root the
# throwaway PostgreSQL runs as a user of its own), then runs
# BenchmarkCluster as make bench-cluster does, with the bundle's binaries,
# its PostgreSQL under test/postgres/with-postgres.sh, and every
# LONGHAUL_BENCH_* setting of the environment (LONGHAUL_BENCH_OUT writes
# the tables as Markdown too).
set -euo pipefail

parts=$(cd "${1:?usage: run.sh DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
box=${BOX:-/opt/longhaul-benchbox}
mkdir -p "$box"
cat "$parts"/[0-9][0-9]/bundle.tar.xz.* | xz -d | tar -C "$box" -xf -
chmod -R a+rX "$box"

export PATH=$box/bin:$PATH
export LD_LIBRARY_PATH=$box/pg/syslib
export LONGHAUL_PG_BINDIR
LONGHAUL_PG_BINDIR=$(ls -d "$box"/pg/lib/postgresql/*/bin | sort -V | tail -n 1)
export LONGHAUL_BENCH_CLUSTER=1 LONGHAUL_BENCH_BIN=$box/bin/longhaul LONGHAUL_BENCH_TEMPORAL_DIR=$box/temporal

echo "run.sh: $(nproc) CPUs, $(awk '/MemTotal/{print $2/1048576 " GiB"}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# The benchmarks' working directory is their package's, as go test's.
cd "$root/bench"
exec "$root/test/postgres/with-postgres.sh" "$box/bin/bench.test" -test.run '^$' -test.bench '^BenchmarkCluster$' \
	-test.benchtime 1x -test.timeout 60m
