#!/usr/bin/env bash
# roofline.sh — reads `go test -bench` output on standard input, passes it through, and ends with the roofline
# shares (docs/speed.md): the GFLOP/s of each BenchmarkTrainStepMulti30kBF16 case (float32, bf16x3, bf16) against
# BenchmarkGemm's, the FLOPs counted once whatever precision computes them. `make bench` pipes its Go benchmarks
# through it, followed by a line "exit N" with go test's status, which this script exits with (the line itself is
# not printed). With -benchtime 10x the step figures are rough; measure with -benchtime 60x -count 3 for a report.
set -euo pipefail
awk '
	/^exit [0-9]+$/ { status = $2; next }
	{ print }
	/^BenchmarkGemm-[0-9]+[ \t]/ || /^BenchmarkTrainStepMulti30kBF16\// {
		for (i = 2; i <= NF; i++) if ($(i+1) == "GFLOP/s") rate = $i
		if ($1 ~ /^BenchmarkGemm-/) gemm = rate
		else { name = $1; sub(/^BenchmarkTrainStepMulti30kBF16\//, "", name); sub(/-[0-9]+$/, "", name); step[name] = rate; order[++n] = name }
	}
	END {
		if (gemm == "" || n == 0) exit status
		line = sprintf("roofline: BenchmarkGemm %.1f GFLOP/s; training step", gemm)
		for (i = 1; i <= n; i++) line = line sprintf(" %s %.1f (%.0f%%)", order[i], step[order[i]], 100 * step[order[i]] / gemm)
		print line
		exit status
	}'
