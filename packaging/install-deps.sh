#!/usr/bin/env bash
# Installs every Debian package that building, running and testing Folio need. Safe to run again.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config git ccache
    clang libclang-rt-14-dev clang-tidy clang-format
    qt6-base-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools libgl-dev
    qt6-webengine-dev qt6-declarative-dev libjs-katex
    libpoppler-qt6-dev libqpdf-dev libxlsxwriter-dev libzip-dev
    fonts-wqy-microhei
    libopencv-dev
    libicu-dev
    nlohmann-json3-dev
    libcurl4-openssl-dev libssl-dev libcpp-httplib-dev prometheus-cpp-dev curl
    libgtest-dev libgmock-dev
    xvfb xauth
    dpkg-dev file appstream desktop-file-utils librsvg2-bin
    python3 python3-jinja2 python3-docx libreoffice-writer-nogui libreoffice-math-nogui
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
