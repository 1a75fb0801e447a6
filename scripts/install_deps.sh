#!/usr/bin/env bash
# Debian/Ubuntu packages the build needs (the CUDA toolkit is expected at /usr/local/cuda).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq cmake ninja-build g++ libfmt-dev nlohmann-json3-dev doctest-dev libcli11-dev libxxhash-dev >/dev/null
echo "dependencies installed"
