#!/usr/bin/env bash
# busted for the sanitizer builds: build-san / build-tsan's ctest entries run this instead of
# busted (tools/sanitizers/run.sh configures -DBUSTED_EXE=<this>). busted's own driver needs no
# sanitizer; the luajit it starts for the specs (and any luajit a spec starts) is
# tools/sanitizers/bin/luajit, which loads the sanitizer runtime that libfastnn needs.
set -u
export PATH="$(cd "$(dirname "$0")" && pwd)/bin:$PATH"
exec "${FASTNN_SAN_BUSTED:-busted}" "$@"
