#!/bin/sh
# tools/mpirun.sh: mpirun with the settings fastnn-lua's multi-rank runs need on one machine,
# in one place (the distributed spec, the all-reduce bench and the docs use it).
#   tools/mpirun.sh -np 2 build/fastnn-lua examples/ddp_mlp.lua
# --oversubscribe: more ranks than cores is fine for tests (this machine has 2 cores);
# --allow-run-as-root: only when running as root (containers, CI);
# --bind-to none: ranks of a small job must not be pinned to the same core.
# Extra mpirun options pass through (e.g. --hostfile hosts -x FASTNN_NUM_THREADS).
set -e
root=
if [ "$(id -u)" = 0 ]; then root=--allow-run-as-root; fi
exec mpirun $root --oversubscribe --bind-to none "$@"
