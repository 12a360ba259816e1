#!/usr/bin/env bash
# Memory soak: `reqtop demo --listen` in the monitor (new waves until `q`) and a second
# monitor attached to it, both under tmux; resident memory of each every 30 s.
#   scripts/soak.sh [MINUTES (30)] [REQTOP binary (.build/debug/reqtop)] > rss.txt
# Prints: seconds, demo RSS (KiB), attached RSS (KiB), operations so far.
set -euo pipefail
minutes=${1:-30}
reqtop=$(realpath "${2:-.build/debug/reqtop}")
server=reqtop-soak-$$
cleanup() { tmux -L "$server" kill-server 2>/dev/null || true; }
trap cleanup EXIT
tmux -L "$server" new-session -d -s soak -x 200 -y 50 "$reqtop demo --listen"
sleep 3
demo=$(tmux -L "$server" list-panes -t soak:0 -F '#{pane_pid}')
tmux -L "$server" new-window -t soak "$reqtop attach $demo"
sleep 2
attached=$(tmux -L "$server" list-panes -t soak:1 -F '#{pane_pid}')
echo "seconds demo_rss_kib attach_rss_kib operations"
for ((i = 0; i <= minutes * 2; i++)); do
  d=$(awk '/VmRSS/{print $2}' "/proc/$demo/status")
  a=$(awk '/VmRSS/{print $2}' "/proc/$attached/status")
  ops=$(tmux -L "$server" capture-pane -p -t soak:0 | sed -n 2p | grep -o '[0-9]* ops' | head -1 || true)
  echo "$((i * 30)) $d $a ${ops% ops}"
  [ "$i" -lt $((minutes * 2)) ] && sleep 30
done
tmux -L "$server" send-keys -t soak:1 q
sleep 1
tmux -L "$server" send-keys -t soak:0 q
sleep 2
