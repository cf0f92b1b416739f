#!/usr/bin/env bash
# pg_server.sh -- a throwaway PostgreSQL 15 on loopback for the postgres://
# registry tests (tests/test_registry_pg.c).
#
#   tests/pg_server.sh start DIR PORT   initdb under DIR (created; must not
#                                       exist, or be left over from an earlier
#                                       start), start on 127.0.0.1:PORT (or PG_HOST) with
#                                       its socket in DIR, wait until it takes
#                                       connections, print its URI on stdout:
#                                       postgres://postgres@127.0.0.1:PORT/postgres
#   tests/pg_server.sh stop DIR         stop it (fast) and remove DIR
#   tests/pg_server.sh pause DIR        stop it (fast), keeping its data
#   tests/pg_server.sh resume DIR       start it again, on the same port
#
# PG_HOST=ADDR listens on ADDR instead of 127.0.0.1 (the cluster test runs it
# in a network namespace of its own) and trusts clients on ADDR's subnet.
# Trust authentication and fsync=off: for tests only.  As root, the server
# runs as the `postgres` user (initdb refuses root).  Everything but the URI
# goes to stderr; the server's log is DIR/log.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
HOST=${PG_HOST:-127.0.0.1}
MARK=.idgen-pg-server # marks a DIR this script made, so that only such a DIR is removed

die() {
  echo "pg_server.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start DIR PORT | stop DIR | pause DIR | resume DIR" >&2
  exit 2
}

# Runs a command as the server's user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Whether something accepts TCP connections on $HOST:$1.
port_busy() {
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

# Whether DIR's server is running: its postmaster.pid names a live postgres
# process.  (Not `pg_ctl status`: it counts a killed postmaster that nobody
# has reaped yet, a zombie, as running.)
running() {
  local pid state
  pid=$(head -n 1 "$1/data/postmaster.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ] || return 1
  state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Removes DIR if this script made it (or it is empty); refuses anything else.
remove_dir() {
  local dir=$1
  [ -e "$dir" ] || return 0
  if [ -f "$dir/$MARK" ] || [ -z "$(ls -A "$dir" 2>/dev/null)" ]; then
    rm -rf -- "$dir"
  else
    die "$dir exists and was not made by pg_server.sh: refusing to remove it"
  fi
}

start() {
  local dir=$1 port=$2
  if ! [[ $port =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
    die "bad port \"$port\" (1..65535)"
  fi
  [ -x "$PGBIN/initdb" ] || die "no PostgreSQL 15 in $PGBIN (apt-get install postgresql-15)"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a postgres user (apt-get install postgresql-15)"
  fi
  case $dir in
    /*) ;;
    *) dir=$PWD/$dir ;;
  esac
  # The server's socket file is DIR/.s.PGSQL.PORT: sun_path holds 107 bytes.
  [ "${#dir}" -le 90 ] || die "DIR is too long for a Unix socket path (${#dir} > 90 characters): $dir"
  if running "$dir"; then
    die "a server is already running in $dir: stop it first ($0 stop $dir)"
  fi
  remove_dir "$dir" # stale, from a start that was never stopped
  if port_busy "$port"; then
    die "port $port on $HOST is already in use: pick another"
  fi

  mkdir -p -- "$dir"
  touch "$dir/$MARK"
  echo "$port" >"$dir/port"
  echo "$HOST" >"$dir/host"
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    runuser -u postgres -- test -w "$dir" ||
      die "the postgres user cannot write $dir (is a parent directory closed to it? use one under /tmp)"
  fi
  if ! as_pg "$PGBIN/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync \
    >"$dir/initdb.log" 2>&1; then
    tail -n 20 "$dir/initdb.log" >&2
    die "initdb failed (log above, in $dir/initdb.log)"
  fi
  [ "$HOST" = 127.0.0.1 ] || echo "host all all samenet trust" >>"$dir/data/pg_hba.conf"
  if ! server_up "$dir" "$port"; then
    tail -n 20 "$dir/log" >&2 || true
    if grep -q "Address already in use" "$dir/log" 2>/dev/null; then
      die "port $port on $HOST is already in use (the server could not bind it)"
    fi
    die "the server did not start (log above, in $dir/log)"
  fi
  wait_tcp "$dir" "$port"
  echo "postgres://postgres@$HOST:$port/postgres"
}

# Starts DIR's server on PORT (its data already made); fails as pg_ctl does.
# A start takes about a second; the 90 s are for a busy machine.
server_up() {
  as_pg "$PGBIN/pg_ctl" -D "$1/data" -l "$1/log" -w -t 90 \
    -o "-p $2 -k $1 -c listen_addresses=$HOST -c fsync=off" start >/dev/null 2>&1
}

# pg_ctl -w waits on the socket file; wait for TCP too (at once on a quiet
# machine; up to 60 s for a busy one).
wait_tcp() {
  local end=$((SECONDS + 60))
  until "$PGBIN/pg_isready" -q -h "$HOST" -p "$2" -U postgres -d postgres -t 5; do
    if [ "$SECONDS" -ge "$end" ]; then
      tail -n 20 "$1/log" >&2 || true
      die "the server started but does not answer on $HOST:$2 within 60 s"
    fi
    sleep 0.1
  done
}

pause() {
  [ -f "$1/$MARK" ] || die "$1 was not made by pg_server.sh"
  as_pg "$PGBIN/pg_ctl" -D "$1/data" -m fast -w -t 90 stop >/dev/null 2>&1 ||
    die "the server in $1 did not stop (see $1/log)"
}

resume() {
  [ -f "$1/$MARK" ] || die "$1 was not made by pg_server.sh"
  local port
  port=$(cat "$1/port")
  HOST=$(cat "$1/host" 2>/dev/null || echo "$HOST")
  server_up "$1" "$port" || {
    tail -n 20 "$1/log" >&2 || true
    die "the server in $1 did not start again (its log's last lines above)"
  }
  wait_tcp "$1" "$port"
}

stop() {
  local dir=$1
  case $dir in
    /*) ;;
    *) dir=$PWD/$dir ;;
  esac
  [ -e "$dir" ] || {
    echo "pg_server.sh: $dir does not exist: nothing to stop" >&2
    return 0
  }
  [ -f "$dir/$MARK" ] || die "$dir was not made by pg_server.sh: refusing to touch it"
  if running "$dir"; then
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 90 stop >/dev/null 2>&1 ||
      ! running "$dir" || die "the server in $dir did not stop (see $dir/log)"
  fi
  remove_dir "$dir"
}

[ $# -ge 1 ] || usage
case $1 in
  start)
    [ $# -eq 3 ] || usage
    start "$2" "$3"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    stop "$2"
    ;;
  pause | resume)
    [ $# -eq 2 ] || usage
    "$1" "$2"
    ;;
  *) usage ;;
esac
