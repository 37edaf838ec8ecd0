#!/usr/bin/env bash
# Build and run the Open MPI one-sided peer benchmark; prints CSV on stdout. It never installs
# anything: without Open MPI it says how to install it and exits with code 3 (the live-peers
# experiment then skips the peer side and shows that message in the report).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
missing=()
for tool in mpicc mpirun; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "Open MPI is not installed (no ${missing[*]} on PATH): install it with \`apt-get install openmpi-bin libopenmpi-dev\`" >&2
  exit 3
fi
out="${TMPDIR:-/tmp}/unpinned-mpi-rma"
mpicc -O2 -o "$out" "$here/mpi_rma.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=
exec mpirun --oversubscribe -np 2 --mca btl self,vader "$out" "$@"
