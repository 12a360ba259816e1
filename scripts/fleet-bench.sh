#!/usr/bin/env bash
# The fleet benchmark (#45), in one run:
#   1. four programs, each sending 250 small GETs a second (about 2,000 events a second), with
#      and without `reqtop attach --all` watching them in a real terminal (tmux, 200x50),
#      alternating; the programs' rate and latency, the monitor's frame times and CPU;
#   2. one such program with a TLS endpoint, with and without a peer abusing its port
#      (1,000 connections that never finish a handshake, garbage, connections opened and
#      dropped), alternating: the program's rate and latency.
# Usage: bash scripts/fleet-bench.sh [ROUNDS] (default 2; each round 20 s a part)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
RATE=250
DURATION=${DURATION:-20}
swift build -c release --product reqtop >/dev/null
swift build -c release --product reqtop-bench >/dev/null
BIN=$(swift build -c release --show-bin-path)
work=$(mktemp -d /tmp/reqtop-fleet-XXXXXX)
mkdir -m 700 "$work/rt"
trap 'tmux kill-session -t reqtop-fleet-bench 2>/dev/null || true; pkill -f "reqtop-bench --paced" || true; rm -rf "$work"' EXIT

# Four programs; with "monitor", `reqtop attach --all` runs in tmux from before they start.
programs() {
    local monitor=$1 round=$2
    rm -f "$work"/p*.out "$work/frames" "$work/cpu"
    if [ "$monitor" = monitor ]; then
        tmux new-session -d -s reqtop-fleet-bench -x 200 -y 50 \
            "env XDG_RUNTIME_DIR=$work/rt REQTOP_FRAME_STATS=$work/frames /usr/bin/time -f '%U %S %e' -o $work/cpu $BIN/reqtop attach --all"
        sleep 1
    fi
    for i in 1 2 3 4; do
        XDG_RUNTIME_DIR="$work/rt" "$BIN/reqtop-bench" --paced $RATE --seconds "$DURATION" > "$work/p$i.out" 2>&1 &
    done
    wait
    if [ "$monitor" = monitor ]; then
        tmux send-keys -t reqtop-fleet-bench q
        for _ in $(seq 1 100); do [ -s "$work/cpu" ] && break; sleep 0.1; done
        echo "round $round, monitor: $(cat "$work/frames"); CPU user+sys $(awk '{printf "%.1f s over %.0f s (%.0f%% of a core)", $1+$2, $3, 100*($1+$2)/$3}' "$work/cpu")"
    fi
    for i in 1 2 3 4; do echo "round $round, $monitor, program $i: $(grep '^paced' "$work/p$i.out")"; done
}

for round in $(seq 1 "$ROUNDS"); do
    programs none "$round"
    programs monitor "$round"
done

# One program with a TLS endpoint, with and without abuse of its port.
python3 - "$BIN" "$work" "$ROUNDS" "$RATE" "$DURATION" <<'PY'
import os, resource, socket, subprocess, sys, threading, time
bin_dir, work, rounds, rate, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
pki = os.path.join(work, "pki")
os.makedirs(pki, exist_ok=True)
def sh(*args): subprocess.run(args, check=True, capture_output=True)
sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{pki}/ca.key",
   "-out", f"{pki}/ca.pem", "-days", "1", "-subj", "/CN=bench CA")
sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{pki}/p.key", "-out", f"{pki}/p.csr", "-subj", "/CN=bench")
with open(f"{pki}/ext", "w") as f: f.write("subjectAltName=IP:127.0.0.1\n")
sh("openssl", "x509", "-req", "-in", f"{pki}/p.csr", "-CA", f"{pki}/ca.pem", "-CAkey", f"{pki}/ca.key", "-CAcreateserial",
   "-out", f"{pki}/p.pem", "-days", "1", "-extfile", f"{pki}/ext")

def abuse(port, stop):
    """Up to 1,000 silent connections (a handshake never finished), garbage, half a
    ClientHello, and connections opened and dropped at once, until `stop`."""
    held = []
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            kind = len(held) % 4
            if kind == 1: s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + os.urandom(512))
            elif kind == 2: s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # half a ClientHello
            elif kind == 3: s.close(); continue
            held.append(s)
            if len(held) >= 1000:
                held.pop(0).close()
        except OSError:
            time.sleep(0.01)
    for s in held: s.close()

for round in range(1, rounds + 1):
    for abused in (False, True):
        env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(work, "rt"))
        program = subprocess.Popen([f"{bin_dir}/reqtop-bench", "--paced", rate, "--seconds", str(duration), "--tls",
                                    f"{pki}/p.pem", f"{pki}/p.key", f"{pki}/ca.pem"], stdout=subprocess.PIPE, text=True, env=env)
        port = int(program.stdout.readline().split()[-1])
        stop = threading.Event()
        abuser = threading.Thread(target=abuse, args=(port, stop)) if abused else None
        if abuser: abuser.start()
        out = program.stdout.read()
        stop.set()
        if abuser: abuser.join()
        line = [l for l in out.splitlines() if l.startswith("paced")][0]
        print(f"round {round}, TLS endpoint {'abused' if abused else 'left alone'}: {line}", flush=True)
PY
