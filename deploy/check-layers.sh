#!/usr/bin/env bash
# Checks the layers of docs/architecture.md: each folder includes only the project folders below it,
# CAF only in messages/, actors/ and app/, Eigen/CUDA/cuDNN/cuBLAS/oneDNN only in compute/.
# Every actors/*.cpp uses CAF.
# Exit 0: every include is allowed; 1: the includes that are not, with their file and line.
set -uo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [compute]="compute"
  [config]="config"
  [datasets]="datasets"
  [training]="training compute config datasets"
  [messages]="messages compute training config"
  [actors]="actors messages training compute config datasets"
  [app]="app actors messages training compute config datasets"
)
bad=0
for layer in "${!allowed[@]}"; do
  [ -d "$layer" ] || continue
  pattern=$(echo "${allowed[$layer]}" | tr ' ' '|')
  # Project includes ("folder/...") outside the allowed folders.
  while IFS= read -r hit; do
    echo "$hit: ${layer}/ may include only ${allowed[$layer]// /, }"
    bad=1
  done < <(grep -rnE '#include "[a-z_]+/' "$layer" | grep -vE "#include \"($pattern)/")
  # Third-party headers that belong to one layer only.
  if [ "$layer" != compute ]; then
    while IFS= read -r hit; do
      echo "$hit: Eigen, CUDA, cuDNN, cuBLAS and oneDNN live in compute/ only"
      bad=1
    done < <(grep -rnE '#include [<"](Eigen/|unsupported/Eigen|cuda|cudnn|cublas|dnnl|oneapi/)' "$layer")
  fi
  case "$layer" in messages | actors | app) ;; *)
    while IFS= read -r hit; do
      echo "$hit: CAF lives in messages/, actors/ and app/ only"
      bad=1
    done < <(grep -rnE '#include [<"]caf/' "$layer")
    ;;
  esac
done
# actors/ holds code that uses CAF: each file sends, asks, monitors or defines a behavior (a name of
# CAF's, an actor's `self`, an atom). Code without that belongs in training/.
for f in actors/*.cpp; do
  [ -e "$f" ] || continue
  if ! grep -qE 'caf::|\bself\b|self_|anon_send|\.ask<|\.gather<|behavior|_atom_v' "$f"; then
    echo "$f: uses no CAF: actors/ holds actor code only; plain decisions go to training/"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "check-layers: every include follows docs/architecture.md; every actors/ file uses CAF"
exit $bad
