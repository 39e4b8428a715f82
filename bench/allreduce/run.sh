#!/bin/sh
# bench/allreduce/run.sh [MB = 100] [REPEATS = 10]: the all-reduce bandwidth of an MB-megabyte
# float32 gradient between 2 ranks on this machine, through fnn.distributed against the raw
# MPI_Allreduce of the same bytes (bench/allreduce/raw_allreduce.c); the two run alternately,
# twice each, and the best of each is kept. Prints both and the ratio (target >= 0.9).
# Needs a build with -DFASTNN_MPI=ON in $BUILD (default ./build).
set -e
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
MB=${1:-100}
REPEATS=${2:-10}
export FASTNN_LIB="$PWD/$BUILD/libfastnn.so" FASTNN_NUM_THREADS=1 OMP_NUM_THREADS=1
gbs() { sed -n 's/.* \([0-9.]*\) GB\/s$/\1/p'; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0) ? a : b }'; }
r=0; l=0
for _ in 1 2; do
  r=$(best "$r" "$(tools/mpirun.sh -np 2 "$BUILD/raw_allreduce" "$MB" "$REPEATS" | gbs)")
  l=$(best "$l" "$(tools/mpirun.sh -np 2 "$BUILD/fastnn-lua" bench/allreduce/allreduce.lua "$MB" "$REPEATS" | gbs)")
done
awk -v r="$r" -v l="$l" -v mb="$MB" 'BEGIN {
  printf "allreduce_2ranks %s MB: fastnn %.2f GB/s, raw MPI_Allreduce %.2f GB/s, ratio %.2f (target >= 0.9)\n", mb, l, r, l / r }'
