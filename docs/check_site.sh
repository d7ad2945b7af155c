#!/usr/bin/env bash
# Build the documentation site and look at it in a real browser: screenshots of
# the home page, a guide, an environment page and an API page, taken with
# headless Chromium from the site served on 127.0.0.1.  Usage:
#   docs/check_site.sh [OUT_DIR]     (default: /tmp/seer-site-shots)
# Needs the [docs] extra (mkdocs); without Chromium (chromium or
# chromium-browser on PATH, or $CHROMIUM) it builds the site and says that it
# skipped the screenshots.  tests/test_docs_site.py checks the built HTML
# itself (lists, reST leftovers, links, images) without a browser.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/seer-site-shots}
py=${PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || py=python3
mkdir -p "$out"
site=$(mktemp -d /tmp/seer-site-XXXXXX)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$site"
}
trap cleanup EXIT
echo "== mkdocs build --strict"
NO_MKDOCS_2_WARNING=1 "$py" -m mkdocs build --strict -f "$root/mkdocs.yml" -d "$site"
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ]; then
  echo "chromium not found (apt-get install chromium, or set CHROMIUM): screenshots skipped"
  exit 0
fi
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$py" -m http.server "$port" --bind 127.0.0.1 --directory "$site" > /dev/null 2>&1 &
server=$!
for _ in $(seq 50); do
  "$py" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" \
    2>/dev/null && break
  sleep 0.1
done
# page (path under the site) -> screenshot name
pages="home=
getting-started=getting-started/
guide=writing-a-model/
env-pcs=envs/pcs/
env-aircraft=envs/aircraft/
training=training/
performance=performance/
api-envs=api/envs/
api-pymodel=api/pymodel/"
echo "== screenshots (${browser}) -> $out"
while IFS== read -r name path; do
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu \
    --screenshot="$out/$name.png" --window-size="${WIDTH:-1280},${HEIGHT:-2000}" \
    "http://127.0.0.1:$port/$path" > /dev/null 2>&1
  echo "$out/$name.png"
done <<< "$pages"
