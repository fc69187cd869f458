#!/usr/bin/env bash
# Provenance of the transformer family's default text (docs/real-transformer.md#real-text), not
# a set-up step: texts/pride-and-prejudice.txt is committed. On Debian, this downloads
# r-cran-janeaustenr 1.0.0-1 (run `apt-get update` first on a fresh system) and checks that
# tools/get_text.py regenerates the committed file from it byte for byte. Elsewhere, fetch the
# .deb from any Debian mirror and run: python3 tools/get_text.py --deb FILE --check
# Usage: bash tools/get_text.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q r-cran-janeaustenr=1.0.0-1 >/dev/null) || {
    echo "apt-get download r-cran-janeaustenr=1.0.0-1 failed: run 'apt-get update' first," \
        "or fetch the .deb from a Debian mirror and run tools/get_text.py --deb FILE --check" >&2
    exit 1
}
python3 tools/get_text.py --deb "$tmp"/r-cran-janeaustenr_1.0.0-1_all.deb --check
