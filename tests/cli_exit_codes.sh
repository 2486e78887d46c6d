#!/usr/bin/env bash
# The command-line contract on the real binary: exit codes, and data on stdout versus diagnostics
# on stderr. Usage: cli_exit_codes.sh path/to/clustersim
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE STREAM-THAT-MUST-BE-EMPTY args...
  local want="$1" empty="$2"; shift 2
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL: clustersim $* exited $got, expected $want"; cat "$tmp/err"; fail=1; fi
  if [ -s "$tmp/$empty" ]; then echo "FAIL: clustersim $* wrote to std$empty"; fail=1; fi
}
expect 0 err --version
expect 0 err hardware list
expect 0 err hardware show p5.48xlarge --format json
expect 2 out hardware show no-such-machine
expect 2 out no-such-command
expect 2 out hardware list --format yaml
printf '{"schema_version": 1, "model": {"preset": "llama3-8b"}, "trainig": {}}' >"$tmp/bad.json"
expect 2 out simulate "$tmp/bad.json"
expect 2 out simulate "$tmp/missing.json"
exit $fail
