#!/usr/bin/env bash
# reqtop proxy beside tinyproxy, mitmdump and no proxy, in one run on this machine: small GETs
# (plain http with ab; intercepted https with curl, one kept-alive connection per client) at 1
# and 8 clients, then 1 GiB each way through the proxy beside direct curl, tinyproxy and a bare
# TCP relay (the ceiling of any proxy here), with the proxy's peak RSS growth. Prints the tables
# docs/benchmarks.md holds.
#   bash scripts/proxy-bench.sh [requests-per-run]
#   REQTOP=BUILD/reqtop bash scripts/proxy-bench.sh   # a release build made elsewhere (a worktree)
# Needs ab (apache2-utils), tinyproxy, curl; mitmdump from $MITMDUMP or PATH (pip install
# mitmproxy) or its column is left out. Binds to 127.0.0.1 only; every loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-4000}
if [ -n "${REQTOP:-}" ]; then
  [ -x "$REQTOP" ] || { echo "proxy-bench: REQTOP=$REQTOP is not an executable" >&2; exit 2; }
  reqtop="$REQTOP"
else
  swift build -c release --product reqtop > /dev/null
  reqtop="$(swift build -c release --show-bin-path)/reqtop"
fi
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on $1" >&2; return 1; }
"$reqtop" serve --port 0 > "$work/http.out" 2>&1 & pids+=($!)
"$reqtop" serve --tls --port 0 > "$work/https.out" 2>&1 & pids+=($!)
sleep 1
http="$(head -1 "$work/http.out" | grep -o 'http://[^ ]*')"
https="$(head -1 "$work/https.out" | grep -o 'https://[^ ]*')"
https="https://localhost:${https##*:}"
upstream_ca="$(sed -n 2p "$work/https.out" | grep -o '/[^ ]*ca.pem')"

# tinyproxy, reqtop proxy, mitmdump on their own ports.
cat > "$work/tinyproxy.conf" <<CONF
Port 18181
Listen 127.0.0.1
Timeout 30
MaxClients 100
Allow 127.0.0.1
ConnectPort 443
ConnectPort ${https##*:}
CONF
tinyproxy=$(command -v tinyproxy || echo /usr/sbin/tinyproxy)
"$tinyproxy" -d -c "$work/tinyproxy.conf" > /dev/null 2>&1 & pids+=($!)
XDG_CONFIG_HOME="$work" "$reqtop" proxy --port 18182 --no-tui --cacert "$upstream_ca" > /dev/null 2> "$work/proxy.err" & pids+=($!)
proxy_pid=$!
mitmdump="${MITMDUMP:-$(command -v mitmdump || true)}"
if [ -n "$mitmdump" ]; then
  "$mitmdump" -q --listen-host 127.0.0.1 -p 18183 --set confdir="$work/mitm" --set ssl_verify_upstream_trusted_ca="$upstream_ca" > /dev/null 2>&1 & pids+=($!)
fi
wait_port 18181; wait_port 18182; [ -z "$mitmdump" ] || wait_port 18183
reqtop_ca="$work/reqtop/ca/ca.pem"
mitm_ca="$work/mitm/mitmproxy-ca-cert.pem"

ab_rate() { # clients [proxy-port]
  local proxy=()
  [ -n "${2:-}" ] && proxy=(-X "127.0.0.1:$2")
  ab -q -n "$n" -c "$1" "${proxy[@]}" "$http/status/200" 2>/dev/null | awk '/Requests per second/ {printf "%.0f", $4}'
}

curl_rate() { # clients proxy-port|"" cacert [--http1.1|--http2]
  local per=$(( n / 4 / $1 )) args=() start end version="${4:---http1.1}"
  for _ in $(seq "$per"); do args+=("$https/status/200" -o /dev/null); done
  local proxy=()
  [ -n "$2" ] && proxy=(-x "http://127.0.0.1:$2")
  start=$(date +%s.%N)
  for _ in $(seq "$1"); do curl -s "$version" --cacert "$3" "${proxy[@]}" "${args[@]}" & done
  wait
  end=$(date +%s.%N)
  awk -v c="$1" -v p="$per" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", c * p / (e - s) }'
}

echo "small GETs, requests per second ($n per http run, $(( n / 4 )) per https run)"
echo
echo "| clients | direct | tinyproxy | reqtop proxy | mitmdump | reqtop ÷ tinyproxy | reqtop ÷ mitmdump |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in 1 8; do
  d=$(ab_rate "$c"); t=$(ab_rate "$c" 18181); r=$(ab_rate "$c" 18182); m=-
  [ -z "$mitmdump" ] || m=$(ab_rate "$c" 18183)
  echo "| http, $c | $d | $t | $r | $m | $(awk -v a="$r" -v b="$t" 'BEGIN{printf "%.2f", a/b}') | $( [ "$m" = - ] && echo - || awk -v a="$r" -v b="$m" 'BEGIN{printf "%.1f", a/b}') |"
done
# HTTPS intercepted, the client speaking HTTP/1.1, then HTTP/2 (one curl a client, its
# requests in turn on one kept-alive connection). The upstream (`serve --tls`) offers both by
# ALPN; each proxy picks its own upstream version, as direct curl does.
for version in --http1.1 --http2; do
  for c in 1 8; do
    d=$(curl_rate "$c" "" "$upstream_ca" "$version"); r=$(curl_rate "$c" 18182 "$reqtop_ca" "$version"); m=-
    [ -z "$mitmdump" ] || m=$(curl_rate "$c" 18183 "$mitm_ca" "$version")
    echo "| https intercepted ${version#--}, $c | $d | (tunnels only) | $r | $m | - | $( [ "$m" = - ] && echo - || awk -v a="$r" -v b="$m" 'BEGIN{printf "%.1f", a/b}') |"
  done
done

echo
echo "1 GiB through reqtop proxy beside direct curl, tinyproxy and a bare TCP relay (seconds; the proxy's peak RSS growth)"
echo
# The bare relay (scripts/bare-relay.py) copies bytes and nothing else: the most any proxy
# can move here. It relays one port, so curl asks it directly (no proxy protocol).
http_port="${http##*:}"
python3 scripts/bare-relay.py 18184 "$http_port" & pids+=($!)
wait_port 18184
hwm() { awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status"; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$proxy_pid/status"; }
before=$(rss)
timed() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN{printf "%.2f", e-s}'; }
down_direct=$(timed curl -s "$http/zeros/1073741824" -o /dev/null)
down_proxy=$(timed curl -s -x http://127.0.0.1:18182 "$http/zeros/1073741824" -o /dev/null)
down_tiny=$(timed curl -s -x http://127.0.0.1:18181 "$http/zeros/1073741824" -o /dev/null)
down_relay=$(timed curl -s "http://127.0.0.1:18184/zeros/1073741824" -o /dev/null)
head -c 1073741824 /dev/zero > "$work/upload.bin"
up_direct=$(timed curl -s -H "Expect:" -X POST -T "$work/upload.bin" "$http/sink?hash=0")
up_proxy=$(timed curl -s -H "Expect:" -x http://127.0.0.1:18182 -X POST -T "$work/upload.bin" "$http/sink?hash=0")
up_tiny=$(timed curl -s -H "Expect:" -x http://127.0.0.1:18181 -X POST -T "$work/upload.bin" "$http/sink?hash=0")
up_relay=$(timed curl -s -H "Expect:" -X POST -T "$work/upload.bin" "http://127.0.0.1:18184/sink?hash=0")
peak=$(hwm)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
echo "| way | direct | reqtop proxy | tinyproxy | bare TCP relay | reqtop ÷ direct rate | relay ÷ direct rate | reqtop RSS before → peak |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
echo "| download | ${down_direct} s | ${down_proxy} s | ${down_tiny} s | ${down_relay} s | $(ratio "$down_direct" "$down_proxy") | $(ratio "$down_direct" "$down_relay") | $((before / 1024)) → $((peak / 1024)) MiB |"
echo "| upload | ${up_direct} s | ${up_proxy} s | ${up_tiny} s | ${up_relay} s | $(ratio "$up_direct" "$up_proxy") | $(ratio "$up_direct" "$up_relay") | |"
