#!/usr/bin/env bash
# Prints, from a `go test` log, each failed test with the lines it logged,
# each panic, and each failed package: after twenty minutes of output the
# reason for a red run is then in its last screen, not buried above the
# managers' log tails the suites print on failure.
set -euo pipefail
log=${1:?usage: hack/test-failures.sh GO_TEST_LOG}
echo
echo "=== what failed (from $log)"
awk '
	/^[ \t]*--- FAIL/ { keep = 1; n = 0; print; next }
	/^panic: / { keep = 1; n = 0; print; next }
	/^FAIL[ \t]/ { keep = 0; print; next }
	keep && /^[ \t]+/ && n < 40 { print; n++; next }
	keep && /^(goroutine |\t|[a-z].*\.go:[0-9]+)/ && n < 40 { print; n++; next }
	{ keep = 0 }
' "$log"
