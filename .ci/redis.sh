#!/usr/bin/env bash
# A redis-server for the tests of the `redis` load view (test/load-view/).
#
#   eval "$(bash .ci/redis.sh start)"   # prints: export PREFIX_ROUTER_TEST_REDIS_URL=redis://127.0.0.1:PORT
#   bash .ci/redis.sh stop              # stops the server `start` started
#
# start: installs Debian's redis-server when it is missing (apt-get update once, then
# apt-get install -y redis-server), starts it daemonized on a free loopback port without
# persistence, waits for PONG and prints the export line on stdout (everything else on stderr).
# The tests read PREFIX_ROUTER_TEST_REDIS_URL; the outage tests also start their own server from
# the same binary. stop: shuts that server down (by the pid it wrote) and removes its state.
set -euo pipefail

STATE_DIR="${PREFIX_ROUTER_REDIS_DIR:-${TMPDIR:-/tmp}/prefix-router-ci-redis}"

start() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis.sh: installing redis-server" >&2
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >&2
  fi
  mkdir -p "$STATE_DIR"
  local port
  port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --dir "$STATE_DIR" --pidfile "$STATE_DIR/redis.pid" --logfile "$STATE_DIR/redis.log" >&2
  echo "$port" > "$STATE_DIR/port"
  for _ in $(seq 1 200); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null || true)" = "PONG" ]; then
      echo "redis.sh: redis-server $(redis-server --version | awk '{print $3}') on 127.0.0.1:$port" >&2
      echo "export PREFIX_ROUTER_TEST_REDIS_URL=redis://127.0.0.1:$port"
      return 0
    fi
    sleep 0.05
  done
  echo "redis.sh: redis-server did not answer on port $port; its log:" >&2
  cat "$STATE_DIR/redis.log" >&2 || true
  return 1
}

stop() {
  if [ -f "$STATE_DIR/redis.pid" ]; then
    local pid
    pid="$(cat "$STATE_DIR/redis.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    fi
  fi
  rm -rf "$STATE_DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
