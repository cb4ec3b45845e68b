#!/usr/bin/env bash
# Here, where git and apt-get work, before a device call: the git-ignored folders it carries.
#   bench/prep.sh [COMMIT]
# .debs/      the .deb files of cJSON, protobuf-c, libpng and giflib, which the GPU machine
#             lacks (bench/build.sh unpacks them there); each downloaded once
# .baseline/  with COMMIT: that commit's tree, `git archive COMMIT | tar -x -C .baseline`, to
#             measure against (the device's copy has no .git; bench/README.md, "Before and after")
# Then name them in the call's carry: [".debs"] or [".debs", ".baseline"].
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
for pkg in libcjson1 libcjson-dev protobuf-c-compiler libprotobuf-c-dev libprotobuf-c1 \
           libprotobuf32 libprotoc32 libpng-dev libpng16-16 zlib1g-dev libgif-dev libgif7; do
  compgen -G ".debs/${pkg}_*.deb" >/dev/null || (cd .debs && apt-get download "$pkg")
done
if [ $# -ge 1 ]; then
  rm -rf .baseline
  mkdir .baseline
  git archive "$1" | tar -x -C .baseline
  echo "prep.sh: .baseline holds $(git rev-parse --short "$1^{commit}") ($(du -sh .baseline | cut -f1))"
fi
echo "prep.sh: .debs holds $(find .debs -name "*.deb" | wc -l) packages ($(du -sh .debs | cut -f1))"
