#!/usr/bin/env bash
# Fetch the documents of the two question sets built from documents outside ../shared/corpus/
# (tests/data/new_sets/README.md) into var/eval-documents/, checked against their SHA-256, and write
# one file list per set for knowledge_ingest and scripts/side_by_side.py:
#   var/eval-documents/flask.txt   71 reStructuredText pages of the Flask 3.1.3 sdist's docs/
#   var/eval-documents/pdfs.txt    4 PDFs: three from the pdfminer.six 20191110 sdist, and the
#                                  Federal Register page of pdfplumber's test files (not in any sdist:
#                                  fetched from GitHub, so it needs the internet)
# Usage: scripts/fetch_eval_documents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=var/eval-documents
sets=tests/data/new_sets
mkdir -p "$out/sdist" "$out/flask" "$out/pdfs"

fetch_sdist() {  # NAME==VERSION -> the unpacked folder (the two sets' versions differ)
    local spec=$1 version=${1##*==}
    .venv/bin/pip download --quiet --no-deps --no-binary :all: "$spec" -d "$out/sdist" >&2
    local archive
    archive=$(ls "$out/sdist/"*"-$version.tar.gz" | head -n 1)
    tar -xzf "$archive" -C "$out/sdist"
    echo "${archive%.tar.gz}"
}

flask=$(fetch_sdist flask==3.1.3)
: > "$out/flask.txt"
while read -r path; do
    cp "$flask/docs/$path" "$out/flask/"
    echo "$PWD/$out/flask/$(basename "$path")" >> "$out/flask.txt"
done < "$sets/flask_documents.txt"

pdfminer=$(fetch_sdist pdfminer.six==20191110)
: > "$out/pdfs.txt"
while read -r path; do
    cp "$pdfminer/$path" "$out/pdfs/"
    echo "$PWD/$out/pdfs/$(basename "$path")" >> "$out/pdfs.txt"
done < "$sets/pdfs_documents.txt"
register=federal-register-2020-17221.pdf
if curl -fsSL -o "$out/pdfs/$register" \
    "https://raw.githubusercontent.com/jsvine/pdfplumber/147f2c4c07dc1191fc1d05bb589b4f6af3aaf74a/tests/pdfs/$register"; then
    echo "$PWD/$out/pdfs/$register" >> "$out/pdfs.txt"
else
    echo "could not fetch $register (needs the internet); its 12 questions will find nothing" >&2
fi

# The files the questions were written on: a changed release or download fails here, not in the figures.
(cd "$out/pdfs" && grep -E 'pdf$' "$OLDPWD/$sets/SHA256SUMS" | sha256sum --check --ignore-missing --quiet)
(cd "$out/sdist" && grep -E 'tar\.gz$' "$OLDPWD/$sets/SHA256SUMS" | sha256sum --check --quiet)
echo "written: $out/flask.txt ($(wc -l < "$out/flask.txt") files), $out/pdfs.txt ($(wc -l < "$out/pdfs.txt") files)"
