#!/usr/bin/env bash
# Installs every Debian package that building, testing and `make run` need.
# Idempotent: a second run installs nothing and takes about a second.
# Runs as root, or through sudo when started by another user.
set -euo pipefail

# Build: compiler, CMake, Ninja; libraries as Debian -dev packages (headers only for Boost:
# Asio and Beast are header-only, so libboost-dev is enough, not libboost-all-dev).
build_pkgs=(g++ cmake ninja-build pkg-config make
  libboost-dev nlohmann-json3-dev libsqlite3-dev libcli11-dev libspdlog-dev libfmt-dev libtoml11-dev libssl-dev libpqxx-dev
  # The Kubernetes agent (src/kube) speaks the kubelet's pod-resources API, which is gRPC over a
  # Unix socket: the gRPC C++ library, protobuf, and protoc with its gRPC plugin to generate the
  # client (and the test's stand-in kubelet) from src/kube/pod_resources.proto at build time.
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc)
# Tests: GoogleTest/GoogleMock, rapidcheck, Google Benchmark; tools the tests call.
# (node and npm, for the web dashboard's build, come with the machine: not apt packages here.)
test_pkgs=(libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  sqlite3 procps passwd util-linux jq
  prometheus tmux curl openssl postgresql iproute2 python3
  chromium  # the dashboard's browser tests (tests/browser), driven by npm's playwright-core
  poppler-utils  # pdfinfo, pdftoppm, pdftotext: the report PDF's test (tests/e2e/report_pdf_test.sh)
  pngquant  # `make screenshots`: the dashboard's screenshots in docs/ kept small
  # deploy/kubernetes' check (tests/deploy/check_kube_manifests.py): the Kubernetes API's
  # object models, to read each manifest against without a cluster
  python3-kubernetes python3-yaml
  clang libclang-rt-14-dev  # the `fuzz` preset's libFuzzer targets: `make fuzz`, which CI runs after the tests
  # `make deb` and its e2e test: dpkg-shlibdeps, `file` (CPack's shlibdeps finds the ELF files
  # with it; priority standard, so a minimal Debian lacks it), `man`, `systemd-analyze verify`
  dpkg-dev file man-db systemd
  # Slurm companion mode's end-to-end test (tests/e2e/slurm_companion_test.sh) and
  # bench/vs-slurm: a real Slurm on this machine (no daemon starts at install)
  slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge)
# Checks CI runs besides the tests: `make format-check` and `make lint-changed` (clang-tidy).
check_pkgs=(clang-format clang-tidy)

pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "${check_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
