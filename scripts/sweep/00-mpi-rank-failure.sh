# 00 (#15): under mpirun, a process that fails (its corpus is missing) stops the whole job at once, naming the
# process and the file. Needs mpirun and the MPI build (the sweep builds bin/attend-mpi when it can).
. "$REPO/scripts/sweep-lib.sh"
if [ -z "${ATTEND_MPI:-}" ] || ! command -v mpirun >/dev/null; then
  echo "error (skipped: no mpirun or no MPI build of attend)"
  exit
fi
common=(train --config "$REPO/configs/demo.yaml" --tgt s.en --out m.ckpt --max-steps 1000 --no-progress --threads 1)
OPENBLAS_NUM_THREADS=1 limited 100 p mpirun --allow-run-as-root --oversubscribe \
  -np 1 "$ATTEND_MPI" "${common[@]}" --src s.de : -np 1 "$ATTEND_MPI" "${common[@]}" --src missing.de
# mpirun's own status says little (a rank it kills for the abort may show as a signal): judge by the output.
if grep -qE '^panic: |^goroutine [0-9]+ \[|^fatal error: ' p.err; then echo "panic $(grep -m1 -E '^panic: |^fatal error: ' p.err)"; exit; fi
if [ "$HUNG" = yes ]; then echo "wrong the job ran on for 100 s after a process failed"; exit; fi
if [ "$RC" -ne 0 ] && said p "process 1 of 2" && said p "missing.de"; then
  echo "error $(grep -m1 'process 1 of 2' p.err | cut -c1-160)"
else
  echo "wrong exit $RC: $(grep -v -m1 -e '^---' -e '^$' p.err | cut -c1-160)"
fi
