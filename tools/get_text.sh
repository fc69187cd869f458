#!/usr/bin/env bash
# The transformer family's default text (docs/real-transformer.md#real-text): Jane Austen's
# novels as Debian's package r-cran-janeaustenr 1.0.0-1 ships them (MIT; the texts are in the
# public domain), unpacked under data/janeaustenr without installing the package or R.
# Needs Debian's apt (run `apt-get update` first on a fresh system); checks the SHA-256 of the
# .deb. Usage: bash tools/get_text.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DEB=r-cran-janeaustenr_1.0.0-1_all.deb
SHA=df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95
if [ -f data/janeaustenr/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb ]; then
    echo "data/janeaustenr is there already"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q r-cran-janeaustenr=1.0.0-1 >/dev/null) || {
    echo "apt-get download r-cran-janeaustenr=1.0.0-1 failed: run 'apt-get update' first," \
        "or set transformer.text to a text file of your own (docs/real-transformer.md#real-text)" >&2
    exit 1
}
echo "$SHA  $tmp/$DEB" | sha256sum -c --quiet -
mkdir -p data/janeaustenr
dpkg-deb -x "$tmp/$DEB" data/janeaustenr
echo "unpacked $DEB into data/janeaustenr"
