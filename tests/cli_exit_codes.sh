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
# Bad input through the real binary (the whole catalogue runs through cli::run in
# tests/unit/bad_input_catalogue_test.cpp): exit 2, nothing on stdout, nothing left behind.
bad=tests/data/bad_inputs
expect 2 out simulate "$bad/scenario_nodes_1e12.json"
expect 2 out simulate "$bad/scenario_inf.json"
expect 2 out simulate "$bad"
expect 2 out simulate scenarios/default.json --trace "$tmp/missing/trace.json"
mkdir "$tmp/adir"
expect 2 out collective --op all_reduce --system p5.48xlarge --output "$tmp/adir"
expect 2 out collective --op all_reduce --system p5.48xlarge --output /proc/version/out.csv
expect 2 out report "$bad/report_truncated.json"
expect 2 out simulat scenarios/default.json
if [ -e "$tmp/missing" ] || [ -n "$(ls -A "$tmp/adir")" ]; then echo "FAIL: a failed write left a file behind"; fail=1; fi
# An existing output is replaced, never truncated in place: a hard link keeps the old bytes.
echo old >"$tmp/out.csv"; ln "$tmp/out.csv" "$tmp/link.csv"
expect 0 err collective --op all_reduce --system p5.48xlarge --format csv --output "$tmp/out.csv"
if [ "$(cat "$tmp/link.csv")" != old ] || ! grep -q size_bytes "$tmp/out.csv"; then
  echo "FAIL: collective --output did not replace the file atomically"; fail=1
fi
# validate --check needs thresholds recorded for the profile it runs (a renamed copy of the
# built-in one has none); --record-thresholds names a broken thresholds file and leaves it as it was.
sed 's/"name": "hgx-h200-4gpu-2026-11"/"name": "unrecorded"/' calibrate/profiles/hgx-h200-4gpu-2026-11.json >"$tmp/p.json"
expect 2 out validate collectives --calibration "$tmp/p.json" --check
printf '{"schema_version": 2, "note": "n"}' >"$tmp/th.json"
expect 2 out validate collectives --record-thresholds "$tmp/th.json"
if [ "$(cat "$tmp/th.json")" != '{"schema_version": 2, "note": "n"}' ]; then
  echo "FAIL: validate --record-thresholds changed a file it could not read"; fail=1
fi
# --sets: a bad expression, no match, or a partial record all exit 2 before anything runs.
expect 2 out validate collectives --sets '('
expect 2 out validate collectives --sets no-such-set
cp tests/validation/data/collective_thresholds.json "$tmp/ok.json"
expect 2 out validate collectives --sets p5 --record-thresholds "$tmp/ok.json"
cmp -s tests/validation/data/collective_thresholds.json "$tmp/ok.json" || { echo "FAIL: a refused record changed the file"; fail=1; }
exit $fail
