#!/usr/bin/env python3
"""rss.py [--cwd DIR] NAME CMD [ARG ...]

Runs CMD (no shell) with its stdout/stderr passed through, then prints
    RESULT NAME_rss max_rss_mb=<v> MB
where <v> is the peak resident set size of the largest process in CMD's tree
(getrusage(RUSAGE_CHILDREN).ru_maxrss, which covers every waited-for
descendant). Exits with CMD's exit status. bench/run.sh wraps each job of
measure.py in it so the table can put each side's peak memory beside its time.
"""
import os
import resource
import subprocess
import sys


def main():
    args = sys.argv[1:]
    cwd = None
    if len(args) >= 2 and args[0] == "--cwd":
        cwd, args = args[1], args[2:]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        return 2
    name, cmd = args[0], args[1:]
    sys.stdout.flush()
    try:
        rc = subprocess.call(cmd, cwd=cwd)
    except OSError as e:
        print(f"rss.py: cannot run {cmd[0]}: {e}", flush=True)
        return 127
    kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss   # KiB on Linux
    print(f"RESULT {name}_rss max_rss_mb={kb / 1024.0:.1f} MB", flush=True)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
