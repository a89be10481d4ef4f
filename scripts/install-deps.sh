#!/usr/bin/env bash
# Installs what Herald needs to build, test, demo or benchmark on Debian: system packages
# (only those missing) and the Python test tools. Usage: scripts/install-deps.sh [demo|bench]
# (`demo`: only what `make demo` runs: the build's libraries and the capture SMTP server).
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium, chromium-driver: headless, render the campaign HTML report (Tests/campaigns) and drive the /admin console
# through Selenium (Tests/console); fonts-noto-core draws its Persian (RTL) previews.
# postgresql-15: scripts/with-postgres.sh runs a throwaway cluster for the PostgreSQL store's tests (openssl: its TLS
# certificates).
# postfix: a private instance relays and bounces mail in the bounce tests (Tests/support/postfix.py); its smtp-sink and
# smtp-source tools serve the benchmark.
# libcrypt-dev: crypt(3) from libxcrypt checks the bcrypt hashes of accounts imported from Firebase (Sources/CCrypt).
# zlib1g-dev: zlib writes and reads the gzip JSON lines of the message archive (Sources/CZlib, ledger.archive).
packages=(libcurl4-openssl-dev libsqlite3-dev libcrypt-dev zlib1g-dev postgresql-15 openssl pkg-config ca-certificates chromium chromium-driver fonts-dejavu-core fonts-noto-core postfix libfaketime)
requirements=Tests/requirements.txt
if [ "${1:-}" = "demo" ]; then
  packages=(libcurl4-openssl-dev libsqlite3-dev libcrypt-dev zlib1g-dev pkg-config ca-certificates)
  requirements=$(mktemp)
  grep '^aiosmtpd' Tests/requirements.txt >"$requirements"
fi
command -v python3 >/dev/null || packages+=(python3)
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
if [ "${1:-}" = "bench" ]; then packages+=(wrk); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # postfix asks where mail goes; Herald only needs its smtp-sink and smtp-source tools.
  echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

pip_install=(python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$requirements")
# Debian's own python3 is "externally managed" (PEP 668); the test tools then go in beside it.
"${pip_install[@]}" 2>/dev/null || "${pip_install[@]}" --break-system-packages
