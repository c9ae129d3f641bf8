#!/usr/bin/env python3
"""Send files to a `udt recv` (or a script calling udt.receive_files) with a progress bar.

    udt recv --listen 9000 --out incoming --key-file shared.key     # on the receiving host
    python3 send_with_progress.py --key-file shared.key HOST:9000 FILE...

The bar follows the transfer's events: `data_started` names a file and its size, `moved`
adds bytes, `file_done`/`file_failed` end it. Ctrl-C stops the transfer (the receiver is told).
"""

import argparse
import shutil
import sys
import time

import udt


class Bar:
    """One line per file, redrawn at most ten times a second."""

    def __init__(self):
        self.name, self.size, self.done, self.start, self.drawn = "", 0, 0, 0.0, 0.0

    def __call__(self, event):
        kind = event["kind"]
        if kind == "data_started":
            self.name, self.size, self.done = event["path"], event["bytes"], 0
            self.start = time.monotonic()
        elif kind == "moved":
            self.done += event["bytes"]
            if time.monotonic() - self.drawn >= 0.1:
                self.draw()
        elif kind == "file_done":
            self.done = self.size
            self.draw()
            sys.stderr.write("\n")
        elif kind == "file_failed":
            sys.stderr.write(f"\n{event['path']}: failed: {event['reason']}\n")
        elif kind == "waiting":
            sys.stderr.write(f"the receiver is busy, waiting: {event['reason']}\n")

    def draw(self):
        self.drawn = time.monotonic()
        width = max(10, shutil.get_terminal_size().columns - 50)
        share = self.done / self.size if self.size else 1.0
        filled = int(width * share)
        rate = self.done / max(self.drawn - self.start, 1e-6) / 1e6
        sys.stderr.write(
            f"\r{self.name[:20]:20} [{'#' * filled}{'.' * (width - filled)}] {share:6.1%} {rate:8.1f} MB/s"
        )
        sys.stderr.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="HOST:PORT of the receiver")
    parser.add_argument("files", nargs="+")
    secret = parser.add_mutually_exclusive_group(required=True)
    secret.add_argument("--key-file", help="the key file both ends share")
    secret.add_argument("--code", help="the code phrase `udt recv` showed")
    secret.add_argument("--insecure", action="store_true", help="plain UDT (udt recv --insecure)")
    args = parser.parse_args()
    try:
        report = udt.send_files(
            args.files, args.target, key=args.key_file, code=args.code, insecure=args.insecure, progress=Bar()
        )
    except KeyboardInterrupt:
        sys.exit("\ninterrupted")
    except udt.Error as e:
        sys.exit(f"send failed: {e}")
    print(f"{report['sent']} of {report['files']} files sent, {report['bytes']} bytes in {report['seconds']:.1f} s")
    if report["failed"]:
        sys.exit("failed: " + ", ".join(report["failed"]))


if __name__ == "__main__":
    main()
