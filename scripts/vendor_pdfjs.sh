#!/usr/bin/env bash
# Copy pdfjs-dist VERSION from npm into static/vendor/pdfjs (see its README.md).
set -euo pipefail
version="${1:?usage: scripts/vendor_pdfjs.sh VERSION}"
target="$(cd "$(dirname "$0")/.." && pwd)/static/vendor/pdfjs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "pdfjs-dist@$version" >/dev/null && tar xzf pdfjs-dist-*.tgz)
package="$work/package"
rm -rf "$target/cmaps" "$target/standard_fonts" "$target/iccs" "$target/wasm"
mkdir -p "$target/wasm"
cp "$package/build/pdf.min.mjs" "$package/build/pdf.worker.min.mjs" "$package/LICENSE" "$target/"
cp -r "$package/cmaps" "$package/standard_fonts" "$package/iccs" "$target/"
cp "$package"/wasm/*_nowasm_fallback.js "$package"/wasm/LICENSE_JBIG2 "$package"/wasm/LICENSE_OPENJPEG \
  "$package"/wasm/LICENSE_PDFJS_JBIG2 "$package"/wasm/LICENSE_PDFJS_OPENJPEG "$target/wasm/"
sed -i "s/^pdfjs-dist [0-9.]* from npm/pdfjs-dist $version from npm/" "$target/README.md"
echo "pdfjs-dist $version copied into $target"
