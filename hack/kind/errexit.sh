# Sourced by the kind path's scripts. set -e ends a script at the first
# failing command, and that command may have said nothing (its stderr sent to
# /dev/null, or a test): name it and its line on the way out.
set -Eeuo pipefail
trap 'failed_at="line $LINENO: $BASH_COMMAND"' ERR
trap 'status=$?; if [[ $status -ne 0 && -n ${failed_at:-} ]]; then echo "${0##*/}: exit $status at $failed_at" >&2; fi' EXIT
