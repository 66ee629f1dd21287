#!/usr/bin/env bash
# One command that installs everything cosyweb and its test suite need on a fresh
# Debian/Ubuntu machine (or container): the app, the test tools, a CPU build of
# torch for the CosyVoice contract tests, and Debian's chromium + a CJK font for
# the real-browser tests.  Usage:  bash scripts/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}

# --- system packages for the browser tests (skipped where apt is unavailable) ---
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "wenquanyi"; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      chromium fonts-wqy-zenhei >/dev/null
  fi
else
  echo "install.sh: apt-get not found; install chromium yourself for the browser tests" >&2
fi

# --- Python packages ---
$PY -m pip install -q --upgrade pip
# torch: CPU build, only for the tests of the CosyVoice adapter (the app never imports it).
$PY -m pip install -q "torch==2.13.0"
$PY -m pip install -q -e ".[test]"
echo "install.sh: done"
