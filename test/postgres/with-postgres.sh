#!/usr/bin/env bash
# with-postgres.sh CMD [ARG...] runs CMD with LONGHAUL_TEST_POSTGRES_URL set
# to a throwaway PostgreSQL: a cluster initdb makes in a temporary directory,
# listening on a free port of 127.0.0.1 only, trust authentication, with an
# empty database "test". The cluster is stopped and its directory removed
# when CMD ends, however it ends (the EXIT trap also runs on SIGINT and
# SIGTERM), and the script exits with CMD's status. Nothing on the machine is
# used: not a PostgreSQL on 5432, not /var/run/postgresql.
#
# It needs Debian's postgresql package (initdb and pg_ctl); make test-deps
# installs it. initdb refuses to run as root, so as root the cluster runs as
# the postgres system user the package creates (or, when there is none, as a
# system user longhaul-pgtest this script creates), and owns its directory.
#
# A LONGHAUL_TEST_POSTGRES_URL already set is kept: the script then only
# runs CMD.
#
# The cluster trades durability for speed (fsync, synchronous_commit and
# full_page_writes off). LONGHAUL_PG_OPTIONS adds server options after
# those, so a benchmark that must pay for a durable commit sets
# LONGHAUL_PG_OPTIONS='-c fsync=on -c synchronous_commit=on -c full_page_writes=on'.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 CMD [ARG...]" >&2
	exit 2
fi

if [ -n "${LONGHAUL_TEST_POSTGRES_URL:-}" ]; then
	exec "$@"
fi

# The newest installed server's binaries, or those LONGHAUL_PG_BINDIR names
# (a copy of them on a machine without the package: test/benchbox).
bindir=${LONGHAUL_PG_BINDIR:-}
if [ -z "$bindir" ]; then
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && bindir=$d
	done
fi
if [ -z "$bindir" ]; then
	if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
		bindir=$(pg_config --bindir)
	else
		echo "$0: PostgreSQL's initdb is not installed (make test-deps installs Debian's postgresql package)" >&2
		exit 1
	fi
fi

# as runs a command as the cluster's owner.
owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
	owner=postgres
	if ! id -u "$owner" >/dev/null 2>&1; then
		owner=longhaul-pgtest
		id -u "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
	fi
fi
as() {
	if [ "$(id -un)" = "$owner" ]; then
		"$@"
	else
		runuser -u "$owner" -- "$@"
	fi
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/longhaul-pgtest.XXXXXX")
started=""
cleanup() {
	if [ -n "$started" ]; then
		as "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
chmod 0755 "$dir"
[ "$(id -u)" -eq 0 ] && chown "$owner" "$dir"

as "$bindir/initdb" --pgdata "$dir/data" --username postgres --auth trust \
	--encoding UTF8 --locale C --no-sync >"$dir/initdb.log" 2>&1 || {
	cat "$dir/initdb.log" >&2
	exit 1
}

# A free port: one nothing accepts on, and that the server then binds (a
# port taken in between makes pg_ctl fail, and the next one is tried).
for attempt in $(seq 1 20); do
	port=$((20000 + RANDOM % 20000))
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		continue
	fi
	if as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 ${LONGHAUL_PG_OPTIONS:-}" \
		start >/dev/null; then
		started=1
		break
	fi
done
if [ -z "$started" ]; then
	echo "$0: the throwaway PostgreSQL did not start:" >&2
	tail -n 20 "$dir/server.log" >&2 || true
	exit 1
fi

as "$bindir/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres -c 'CREATE DATABASE test' >/dev/null

export LONGHAUL_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
echo "with-postgres: a throwaway PostgreSQL ($("$bindir/postgres" --version | awk '{print $3}')) on 127.0.0.1:$port, stopped when the command ends" >&2

# Not exec: the trap must stop the cluster when the command ends.
status=0
"$@" || status=$?
exit "$status"
