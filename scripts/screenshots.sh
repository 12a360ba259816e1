#!/usr/bin/env bash
# Makes the README's and docs' pictures of the monitor from the real binary: runs `reqtop demo` in
# tmux, presses keys as a person would, captures the screen with its colours and renders
# it to PNG (scripts/ansi_to_png.py). Needs tmux, Pillow and the DejaVu fonts; installs
# what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux; }
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || { apt-get update -qq && apt-get install -y -qq fonts-dejavu-core; }
python3 -c "import PIL" 2>/dev/null || pip install -q pillow

swift build --product reqtop
binary="$(swift build --show-bin-path)/reqtop"
session="reqtop-shots-$$"
cols=120
rows=36
out=Screenshots
mkdir -p "$out"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT

shot() { # name
  tmux capture-pane -t "$session" -p -e > "/tmp/$session.ansi"
  python3 scripts/ansi_to_png.py "/tmp/$session.ansi" "$out/$1.png" "$cols" "$rows"
  echo "wrote $out/$1.png"
}

tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color $binary demo"
# About 4 s in: retries counting down, a download in progress, failures and successes.
sleep 4.2
shot monitor
# The detail view of an operation that retried: its Retries tab.
tmux send-keys -t "$session" / C-u
tmux send-keys -t "$session" -l "w1-flaky"
tmux send-keys -t "$session" Enter
sleep 0.3
tmux send-keys -t "$session" Enter Tab Tab Tab
sleep 0.5
shot detail-retries
tmux send-keys -t "$session" Tab
sleep 0.3
shot detail-timing
# The Body tab of the profile request: the fault server's JSON echo, pretty-printed.
tmux send-keys -t "$session" Escape / C-u
tmux send-keys -t "$session" -l "w1-profile"
tmux send-keys -t "$session" Enter
sleep 0.3
tmux send-keys -t "$session" Enter Tab Tab Tab
sleep 0.5
shot detail-body
# = on the flaky request, r runs it again, = on the re-run: the two side by side.
tmux send-keys -t "$session" Escape / C-u
tmux send-keys -t "$session" -l "w1-flaky"
tmux send-keys -t "$session" Enter
sleep 0.3
tmux send-keys -t "$session" '=' r
sleep 2.5
tmux send-keys -t "$session" G '='
sleep 0.5
shot compare
tmux send-keys -t "$session" Escape
tmux send-keys -t "$session" Escape / C-u Enter
sleep 0.3
tmux send-keys -t "$session" '?'
sleep 0.5
shot help
# About 10 s in: the token expired under a burst; six 401s wait for one refresh.
tmux send-keys -t "$session" Escape / C-u
tmux send-keys -t "$session" -l "/auth"
tmux send-keys -t "$session" Enter
sleep 3.4
shot flow-auth
tmux send-keys -t "$session" Escape q

# Attached to another program: the demo runs headless with its endpoint open, and
# `reqtop attach` watches it from another terminal.
runtime="$(mktemp -d)"
XDG_RUNTIME_DIR="$runtime" "$binary" demo --no-tui --listen > /dev/null 2>&1 &
program=$!
sleep 1
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color XDG_RUNTIME_DIR=$runtime $binary attach"
sleep 4
shot attach
kill -TERM "$program"
sleep 1.5
shot attach-ended
tmux send-keys -t "$session" q
rm -rf "$runtime"

# The Hosts view (`H`) during the demo's outage: the stock host's breaker is open and
# counts down while its requests wait without a slot.
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color $binary demo"
sleep 7
tmux send-keys -t "$session" H
sleep 0.4
shot hosts-outage
# Provoke a failure: ! injects a 503 into every request to the first host; its breaker opens.
tmux send-keys -t "$session" g '!'
sleep 4
shot hosts-fault
tmux send-keys -t "$session" Z q

# Breakpoints: B on the stock requests' path stops each before it is sent (‖ held, WAIT
# break) while the rest of the demo flows; the detail says where it stopped.
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color $binary demo"
sleep 1
tmux send-keys -t "$session" B
tmux send-keys -t "$session" -l "path:/echo"
tmux send-keys -t "$session" Enter
sleep 3.5
shot breakpoints
tmux send-keys -t "$session" / C-u
tmux send-keys -t "$session" -l "w1-stock-1"
tmux send-keys -t "$session" Enter
sleep 0.3
tmux send-keys -t "$session" Enter
sleep 0.5
shot breakpoint-detail
tmux send-keys -t "$session" Escape q

# Two runs on one time axis: the demo's outage recorded, re-run with a 10 % retry budget,
# and replayed together (each operation's what-if row under its original).
shots_dir="$(mktemp -d)"
"$binary" demo --once --no-tui --record "$shots_dir/incident.jsonl" > /dev/null 2>&1 || true  # it has failures: status 1
"$binary" whatif "$shots_dir/incident.jsonl" --set budget.percent=10 --record "$shots_dir/budget10.jsonl" > /dev/null 2>&1 || true
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color $binary replay $shots_dir/incident.jsonl --against $shots_dir/budget10.jsonl --speed 16"
sleep 2
tmux send-keys -t "$session" '>'
sleep 0.5
tmux send-keys -t "$session" / C-u
tmux send-keys -t "$session" -l "stock"
tmux send-keys -t "$session" Enter g
sleep 0.5
shot two-runs
tmux send-keys -t "$session" q
rm -rf "$shots_dir"

# reqtop proxy: curl and Python's urllib through it, one request held at a breakpoint.
proxy_dir="$(mktemp -d)"
"$binary" serve --port 0 > "$proxy_dir/serve.out" 2>&1 &
serve_pid=$!
sleep 1
upstream="$(head -1 "$proxy_dir/serve.out" | grep -o 'http://[^ ]*')"
proxy_port=18089
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x "$cols" -y "$rows" "env LANG=C.UTF-8 TERM=xterm-256color XDG_CONFIG_HOME=$proxy_dir $binary proxy --port $proxy_port"
sleep 1.5
export http_proxy="http://127.0.0.1:$proxy_port"
curl -s "$upstream/status/200" > /dev/null
curl -s "$upstream/bytes/20000?seed=3" > /dev/null
curl -s -d '{"order":42}' -H 'Content-Type: application/json' "$upstream/echo" > /dev/null
curl -s "$upstream/status/503" > /dev/null
python3 -c "import urllib.request; urllib.request.urlopen('$upstream/delay/300').read()"
tmux send-keys -t "$session" B C-u
tmux send-keys -t "$session" -l "path:/echo"
tmux send-keys -t "$session" Enter
sleep 0.3
curl -s -d '{"order":43}' -H 'Content-Type: application/json' "$upstream/echo" > /dev/null &
sleep 1
tmux send-keys -t "$session" G
sleep 0.3
shot proxy
tmux send-keys -t "$session" a C-u
tmux send-keys -t "$session" -l '200 {"mocked":true}'
tmux send-keys -t "$session" Enter
sleep 0.5
unset http_proxy
tmux send-keys -t "$session" q
kill "$serve_pid" 2>/dev/null || true
rm -rf "$proxy_dir"
