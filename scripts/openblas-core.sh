# openblas-core.sh — sourced by the scripts that train or time, with ATTEND naming an attend binary:
# `. scripts/openblas-core.sh` exports OPENBLAS_CORETYPE as the OpenBLAS kernels that binary picks for this CPU,
# so that attend, the PyTorch reference and Go test binaries all run on them. Some machines export
# OPENBLAS_CORETYPE=Haswell (1.5-1.8x slower on AVX-512 CPUs), and an OpenBLAS older than the CPU falls back to
# Prescott's kernels (4.5x slower); attend corrects the second itself (backend.Select), the PyTorch
# reference and most test binaries do not. With a binary built without OpenBLAS, OPENBLAS_CORETYPE is left unset.
core=$(env -u OPENBLAS_CORETYPE "${ATTEND:?}" version | awk '/^BLAS core:/ {print $3}')
if [ -n "$core" ]; then export OPENBLAS_CORETYPE=$core; else unset OPENBLAS_CORETYPE; fi
