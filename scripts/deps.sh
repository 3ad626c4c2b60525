#!/bin/sh
# deps.sh PKG... - installs the Debian packages among PKG that are missing.
# Idempotent: does nothing (and needs no network) when all are present.
set -e
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps: need root or sudo to install:$missing" >&2; exit 1; }
  SUDO=sudo
fi
# wait for another apt (a parallel `make`) instead of failing on its lock
APT="$SUDO apt-get -o DPkg::Lock::Timeout=600"
# a foreign-architecture package (pkg:arm64, the cross build's libraries) needs
# that architecture known to dpkg before apt can see it
for p in $missing; do
  case $p in
    *:*) arch=${p##*:}
         dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch" ;;
  esac
done
$APT update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $APT install -y -qq --no-install-recommends $missing
