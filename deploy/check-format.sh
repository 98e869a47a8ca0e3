#!/usr/bin/env bash
# Checks that every C++ source in git is formatted by the checked-in .clang-format.
# Exit 0: all formatted; 1: the files that are not (fix with: clang-format -i FILE); 77: no clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed (deploy/install-deps.sh installs it)"; exit 77; }
bad=()
while IFS= read -r -d '' file; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || bad+=("$file")
done < <(git ls-files -z '*.cpp' '*.hpp' '*.cu')
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted by .clang-format (run clang-format -i on them):\n'
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check-format: $(git ls-files '*.cpp' '*.hpp' '*.cu' | wc -l) files formatted"
