#!/usr/bin/env python3
"""A bare TCP relay for the proxy benchmark: copies bytes between a client and one upstream
port with 1 MiB buffers and nothing else (no HTTP, no events) — the most any proxy can move
on this machine, where the kernel's copies are the whole cost. 127.0.0.1 only.

    python3 scripts/bare-relay.py LISTEN-PORT UPSTREAM-PORT
"""
import socket
import sys
import threading


def pump(source, sink):
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    while True:
        count = source.recv_into(buffer)
        if not count:
            break
        sink.sendall(view[:count])
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def main():
    listen, upstream = int(sys.argv[1]), int(sys.argv[2])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen))
    server.listen(16)
    while True:
        client, _ = server.accept()
        target = socket.create_connection(("127.0.0.1", upstream))
        threading.Thread(target=pump, args=(client, target), daemon=True).start()
        threading.Thread(target=pump, args=(target, client), daemon=True).start()


if __name__ == "__main__":
    main()
