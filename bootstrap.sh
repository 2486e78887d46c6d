#!/usr/bin/env bash
# One entry point for a fresh Debian or Ubuntu machine.
#   ./bootstrap.sh        install what is missing, build, run the default scenario
#   ./bootstrap.sh test   install what is missing, build, run the test suite
# Packages are installed with apt-get, as root or through sudo, only when missing.
set -euo pipefail
cd "$(dirname "$0")"
mode="${1:-run}"

packages=(g++ cmake make pkg-config libcli11-dev nlohmann-json3-dev libeigen3-dev libboost-graph-dev catch2
          libbenchmark-dev python3-yaml python3-jsonschema libssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}" >&2
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build -j2 >&2

case "$mode" in
  run)
    build/clustersim simulate scenarios/default.json
    ;;
  test)
    ctest --test-dir build --output-on-failure -j2
    ;;
  *)
    echo "usage: $0 [run|test]" >&2
    exit 2
    ;;
esac
