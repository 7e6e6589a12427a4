#!/usr/bin/env bash
# Installs node-llama-cpp, which the real-engine fleet (prefix-router fleet --engine llama,
# startLlamaFleet) and its test need, into its own folder: the project's package.json,
# package-lock.json and node_modules stay as they are (an in-place `npm install --omit=optional`
# would remove the optional platform binaries of other packages, esbuild's among them).
#
#   bash .ci/llama.sh          # or: npm run engines:llama
#
# Idempotent: does nothing when the pinned version is already there. Only this platform's CPU
# binaries (about 83 MB); install scripts are skipped (the binaries are in the package), and
# nothing is built or downloaded at run time. The folder is PREFIX_ROUTER_LLAMA_DIR, else
# node_modules/.cache/prefix-router-llama (which `npm ci` empties with the rest of node_modules:
# run this after it). Keep VERSION equal to NODE_LLAMA_CPP_VERSION in tools/fleet/llama/runtime.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=3.21.1
DIR="${PREFIX_ROUTER_LLAMA_DIR:-node_modules/.cache/prefix-router-llama}"
BINARIES="$(node -p '
  const os = { darwin: "mac", win32: "win" }[process.platform] ?? process.platform;
  `@node-llama-cpp/${os}-${process.arch}${process.platform === "darwin" && process.arch === "arm64" ? "-metal" : ""}`')"

installed() {
  node -e '
    const [dir, version, ...names] = process.argv.slice(1);
    const { join, resolve } = require("node:path");
    for (const name of names) {
      const manifest = join(resolve(dir), "node_modules", name, "package.json");
      try { if (require(manifest).version !== version) process.exit(1); } catch { process.exit(1); }
    }' "$DIR" "$VERSION" node-llama-cpp "$BINARIES"
}

if installed; then
  echo "llama.sh: node-llama-cpp $VERSION ($BINARIES) is installed in $DIR" >&2
  exit 0
fi
echo "llama.sh: installing node-llama-cpp $VERSION ($BINARIES) into $DIR" >&2
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{ "private": true, "description": "node-llama-cpp for prefix-router fleet --engine llama" }' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --ignore-scripts --omit=optional -E "node-llama-cpp@$VERSION" "$BINARIES@$VERSION" >&2
installed
echo "llama.sh: installed ($(du -sh "$DIR" | cut -f1))" >&2
