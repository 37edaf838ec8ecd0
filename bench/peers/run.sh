#!/usr/bin/env bash
# Build and run the Open MPI one-sided peer benchmark. Installs Open MPI from Debian's
# packages when it is missing (root, as on the project's machines). Prints CSV on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v mpicc >/dev/null 2>&1; then
  echo "live-peers: installing Open MPI from Debian (openmpi-bin, libopenmpi-dev)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null
fi
out="${TMPDIR:-/tmp}/unpinned-mpi-rma"
mpicc -O2 -o "$out" "$here/mpi_rma.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=
exec mpirun --oversubscribe -np 2 --mca btl self,vader "$out" "$@"
