#!/usr/bin/env bash
# check_top.sh TARGET TOP: tools/top attaches to a running Grove program whose every worker is busy
# (tests/top/top_target.cpp) and shows the process with the longest mailbox first, every worker and
# the busy processes as running: with --once, and, where tmux is installed, interactively in a tmux
# pane (q quits it); hostile clients get an error or nothing, and the socket goes on answering. Run by CTest (tests/CMakeLists.txt: top.attach).
set -euo pipefail
target=$1
top=$2
sock=$(mktemp -u /tmp/grove-top-XXXXXX.sock)
workers=${GROVE_TEST_WORKERS:-2}
fail() { echo "check_top: $*" >&2; exit 1; }

coproc TARGET { GROVE_TOP_SOCKET=$sock GROVE_TEST_WORKERS=$workers exec "$target"; }
target_pid=$TARGET_PID
trap 'kill $target_pid 2>/dev/null || true; rm -f "$sock"' EXIT
read -r -t 60 line <&"${TARGET[0]}" || fail "the target did not get ready"
[[ $line == ready ]] || fail "the target said '$line'"

out=$(python3 "$top" --socket "$sock" --once --sort mailbox -n 10 --interval 0.2)
echo "$out"
first=$(grep -m1 -E '^<[0-9]+\.[0-9]+\.[0-9]+>' <<<"$out") || fail "no process rows"
[[ $first == *hoarder* ]] || fail "the first row by mailbox is not hoarder: $first"
awk '{print $4}' <<<"$first" | grep -qx 50 || fail "hoarder's mailbox is not 50: $first"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' <<<"$out")
[[ $rows -eq $workers ]] || fail "$rows worker rows, not $workers"
running=$(grep -E '^<[^ ]+ +running ' <<<"$out" | grep -vc '\[thread\]' || true)
[[ $running -ge $workers ]] || fail "$running processes shown running, not the $workers spinners"
# The named supervisor (its child restarted twice) and the named pool (2 workers, 1 leased).
grep -qE '^orders +2 +[0-9]+$' <<<"$out" || fail "no supervisor row 'orders' with 2 restarts"
grep -qE '^db +2 +1 +0 +1 +0 +0$' <<<"$out" || fail "no pool row 'db': 2 workers, 1 busy, 1 served"

# By arena: cache's 2 MiB first.
out=$(python3 "$top" --socket "$sock" --once --sort arena -n 3 --interval 0.1)
first=$(grep -m1 -E '^<[0-9]+\.[0-9]+\.[0-9]+>' <<<"$out") || fail "arena: no process rows"
[[ $first == *cache* ]] || fail "the first row by arena is not cache: $first"
[[ $(awk '{print $(NF-1)}' <<<"$first" | tr -d ,) -ge 2048 ]] || fail "cache's arena is under 2048 KiB: $first"

# The default order, recent: reductions over the runtime's own interval (the spinners never reach a
# runtime call, so every row may show 0; the check is that the view and the protocol agree).
out=$(python3 "$top" --socket "$sock" --once -n 5 --interval 0.3)
grep -qE 'sorted by reductions in the last [0-9]+\.[0-9] s' <<<"$out" || fail "recent: no interval in the header: $(head -1 <<<"$out")"
recent=$(grep -cE '^<[0-9]+\.[0-9]+\.[0-9]+>' <<<"$out" || true)
[[ $recent -eq 5 ]] || fail "recent: $recent process rows, not 5"
raw=$(python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.sendall(b"snapshot 3 recent\n")
out = b""
while not out.endswith(b"end\n"):
    c = s.recv(4096)
    if not c: break
    out += c
lines = out.decode().splitlines()
print(sum(1 for l in lines if l.startswith("process\t") and len(l.split("\t")) == 11))
print(sum(1 for l in lines if l.startswith("interval\t")))
PY
)
[[ $raw == $'3\n1' ]] || fail "recent: the answer lacks interval reductions or the interval line: $raw"

# A hostile client: an unknown command gets an error line; one over 256 bytes is dropped; the
# socket goes on answering.
reply=$(python3 - "$sock" <<'PY'
import socket, sys
def ask(data):
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.sendall(data)
    out = b""
    try:
        while True:
            c = s.recv(4096)
            if not c: break
            out += c
    except ConnectionResetError:  # closed with our bytes unread: dropped
        pass
    return out.decode()
print(ask(b"rm -rf /\n").splitlines()[0])
print(len(ask(b"x" * 1000)))
print(ask(b"snapshot 1 mailbox\n").count("process\t"))
PY
)
[[ $(sed -n 1p <<<"$reply") == error* ]] || fail "an unknown command was not refused: $reply"
[[ $(sed -n 2p <<<"$reply") == 0 ]] || fail "an over-long command got an answer: $reply"
[[ $(sed -n 3p <<<"$reply") == 1 ]] || fail "the socket stopped answering after hostile clients: $reply"

if command -v tmux >/dev/null; then
  session=grove-top-$$
  tmux new-session -d -s "$session" -x 140 -y 40 "python3 '$top' --socket '$sock' --sort mailbox --interval 0.2"
  shown=""
  for _ in $(seq 1 200); do  # up to 20 s for the first frame
    shown=$(tmux capture-pane -p -t "$session" 2>/dev/null || true)
    [[ $shown == *hoarder* && $shown == *"q to quit"* ]] && break
    sleep 0.1
  done
  [[ $shown == *hoarder* ]] || { tmux kill-session -t "$session" 2>/dev/null; fail "tmux: no frame showing hoarder: $shown"; }
  tmux send-keys -t "$session" q
  for _ in $(seq 1 100); do
    tmux has-session -t "$session" 2>/dev/null || break
    sleep 0.1
  done
  if tmux has-session -t "$session" 2>/dev/null; then
    tmux kill-session -t "$session"
    fail "tmux: q did not quit tools/top"
  fi
  echo "check_top: tmux: the live view showed hoarder and quit on q"
else
  echo "check_top: tmux is not installed: the interactive view was not checked"
fi

exec {TARGET[1]}>&-
wait "$target_pid" || fail "the target exited with $?"
[[ ! -e $sock ]] || fail "the socket file is still there after the runtime stopped"
echo "check_top: ok"
