"""The client half of bench/peers/erlang/idle_connections.erl, in its own OS process so that only
the server's memory is in the BEAM's resident set (the Grove and Go programs use bare sockets in
their own process for the same reason: a socket's kernel memory is not RSS).

    python3 idle_clients.py PORT N

Opens N connections to 127.0.0.1:PORT, sends "GET /" on each and reads its answer, then prints
"ready" and holds them open until its stdin closes (the BEAM exiting closes it)."""
import resource
import socket
import sys


def main() -> int:
    port, n = int(sys.argv[1]), int(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n + 100, hard), hard))
    req = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    conns = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(req)
        got = b""
        while b"hello, world\n" not in got:
            chunk = s.recv(512)
            if not chunk:
                print(f"no answer on connection {i}", file=sys.stderr)
                return 1
            got += chunk
        conns.append(s)
    print("ready", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
