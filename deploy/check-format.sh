#!/usr/bin/env bash
# Checks that every C++ source in git is formatted by the checked-in .clang-format.
# Exit 0: all formatted; 1: the files that are not (fix with: clang-format -i FILE); 77: no clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (deploy/install-deps.sh installs it)"; exit 77; }
# One clang-format per 64 files, as many at once as there are cores: its warnings name the files
# whose formatting differs (a file it cannot read or parse is reported as not formatted too).
report=$(git ls-files -z '*.cpp' '*.hpp' '*.cu' |
  xargs -0 -n 64 -P "$(nproc)" clang-format --dry-run 2>&1 || true)
mapfile -t bad < <(grep -oE '^[^ :][^:]*:[0-9]+:[0-9]+: (warning|error)' <<<"$report" | cut -d: -f1 | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted by .clang-format (run clang-format -i on them):\n'
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
if grep -q . <<<"$report"; then
  printf 'clang-format failed:\n%s\n' "$report" | head -20
  exit 1
fi
echo "check-format: $(git ls-files '*.cpp' '*.hpp' '*.cu' | wc -l) files formatted"
