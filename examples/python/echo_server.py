#!/usr/bin/env python3
"""A UDT echo server without asyncio: one thread per connection, Ctrl-C to stop.

    python3 echo_server.py 127.0.0.1:9000                  # plain UDT4, any UDT peer
    python3 echo_server.py 127.0.0.1:9000 --key-file k     # only peers holding the same key

Try it with the client below, or `udt cat 127.0.0.1:9000 --insecure`.

    python3 echo_server.py --client 127.0.0.1:9000
"""

import argparse
import sys
import threading

import udt


def serve(conn, peer):
    """Echo until the peer closes; a peer that vanishes ends only its own thread."""
    with conn:
        conn.settimeout(60)  # an idle peer is dropped after a minute
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                conn.sendall(data)
        except udt.Error as e:
            print(f"{peer}: {e}", file=sys.stderr)


def server(addr, key):
    with udt.listen(addr, key=key) as listener:
        print(f"listening on {listener.local_addr}", file=sys.stderr)
        while True:
            try:
                conn, peer = listener.accept()
            except udt.AuthenticationError as e:
                print(f"refused a peer: {e}", file=sys.stderr)
                continue
            threading.Thread(target=serve, args=(conn, peer), daemon=True).start()


def client(addr, key):
    with udt.connect(addr, key=key, timeout=10) as s:
        for line in ["hello", "over", "udt"]:
            s.sendall(line.encode())
            print(s.recv(65536).decode())


def main():
    parser = argparse.ArgumentParser(description="UDT echo server (and client)")
    parser.add_argument("addr", help="HOST:PORT")
    parser.add_argument("--key-file", help="a key file both ends share")
    parser.add_argument("--client", action="store_true", help="be the client")
    args = parser.parse_args()
    try:
        (client if args.client else server)(args.addr, args.key_file)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)


if __name__ == "__main__":
    main()
