#!/usr/bin/env bash
# pack.sh DIR builds, here, what BenchmarkCluster needs on a machine that
# has neither a Go toolchain nor PostgreSQL nor NATS (a bigger Linux/amd64
# machine reached only by copying files), and leaves it in DIR as parts
# DIR/NN/bundle.tar.xz.NN of at most PART bytes (default 56 MiB, so that a
# part and the repository's files stay under 64 MiB), to copy over in as
# many steps:
#
#   bin/         longhaul (as make build ships it), temporal-server and
#                temporal-sql-tool (built from go.mod's go.temporal.io/server),
#                nats-server (Debian's), bench.test (the compiled benchmarks)
#   temporal/    the two Temporal binaries and the module's PostgreSQL schema,
#                for LONGHAUL_BENCH_TEMPORAL_DIR
#   pg/          Debian's PostgreSQL server and client binaries, its extension
#                libraries and share directory, laid out as on Debian
#                (lib/postgresql/N, share/postgresql/N: the server finds its
#                share directory relative to its binary), and syslib/, the
#                shared libraries they link beyond glibc
#
# test/benchbox/run.sh, on the other machine, puts the parts together and
# runs the benchmark. Everything is statically linked Go (CGO_ENABLED=0)
# but PostgreSQL, whose libraries come along and need only glibc >= this
# machine's.
set -euo pipefail

out=${1:?usage: pack.sh DIR}
part=${PART:-58720256}
root=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/temporal" "$stage/pg/syslib" "$out"

cd "$root"
export CGO_ENABLED=0
flags=(-trimpath -ldflags "-s -w")
go build "${flags[@]}" -o "$stage/bin/longhaul" ./cmd/longhaul
go build "${flags[@]}" -o "$stage/temporal/temporal-server" go.temporal.io/server/cmd/server
go build "${flags[@]}" -o "$stage/temporal/temporal-sql-tool" go.temporal.io/server/cmd/tools/sql
go test -c "${flags[@]}" -o "$stage/bin/bench.test" ./bench/
mkdir -p "$stage/temporal/schema"
cp -r "$(go list -m -f '{{.Dir}}' go.temporal.io/server)/schema/postgresql" "$stage/temporal/schema/"
chmod -R u+w "$stage/temporal/schema"
cp "$(command -v nats-server || echo /usr/sbin/nats-server)" "$stage/bin/nats-server"

# PostgreSQL: the newest installed server, as with-postgres.sh picks it.
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pgver=$(basename "$(dirname "$pgbin")")
dest=$stage/pg/lib/postgresql/$pgver
mkdir -p "$dest/bin" "$dest/lib" "$stage/pg/share/postgresql"
cp "$pgbin"/{postgres,initdb,pg_ctl,psql} "$dest/bin/"
# Every extension library but the LLVM JIT (hundreds of MB of LLVM; the
# server runs without it).
find "/usr/lib/postgresql/$pgver/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp {} "$dest/lib/" \;
cp -r "/usr/share/postgresql/$pgver" "$stage/pg/share/postgresql/"
ldd "$dest"/bin/* "$dest"/lib/*.so 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
	grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so' |
	while read -r lib; do cp -L "$lib" "$stage/pg/syslib/"; done

# Each part in a directory of its own (DIR/00/bundle.tar.xz.00, …), so
# each copy step names one path.
rm -rf "$out"/[0-9][0-9]
# The three big Go binaries share most of their code (Temporal's server is
# in all of them): a dictionary that spans them all, with them side by
# side, packs them in about two thirds of the space separate ones take
# (92 against 137 MB). Decompressing it needs that much memory.
tar -C "$stage" -cf - temporal/temporal-server bin/longhaul bin/bench.test temporal/temporal-sql-tool bin/nats-server temporal/schema pg |
	xz -T1 --lzma2=preset=6,dict=640MiB | split -b "$part" -d - "$stage/bundle.tar.xz."
for f in "$stage"/bundle.tar.xz.*; do
	n=${f##*.}
	mkdir -p "$out/$n"
	mv "$f" "$out/$n/"
done
ls -l "$out"/*/
