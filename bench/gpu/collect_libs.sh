#!/usr/bin/env bash
# collect_libs.sh OUT_DIR BINARY...
# Makes the binaries runnable on another Linux x86-64 machine that has the NVIDIA driver, CUDA and
# cuDNN but none of the other libraries petra links (oneDNN, CAF, yaml-cpp, OpenSSL, ...):
#   OUT_DIR/bin/           the binaries (copied, links followed)
#   OUT_DIR/lib/           every shared library ldd resolves for them, except glibc's own libraries
#                          and the CUDA, cuDNN, cuBLAS and driver libraries, which the GPU machine
#                          provides in versions that match its driver
#   OUT_DIR/lib-fallback/  libstdc++ and libgcc_s: used only where the machine's own libstdc++ lacks
#                          the newest GLIBCXX version the binaries need (a newer one is compatible)
#   OUT_DIR/env.sh         `source` it: LD_LIBRARY_PATH with lib/, the folders holding the CUDA
#                          libraries the binaries need (found through ldconfig, CUDA_HOME, the usual
#                          CUDA folders and pip's nvidia wheels) and, where needed, lib-fallback/
# glibc is not bundled: the machine needs a glibc at least as new as this one (BUILD_INFO's line).
set -euo pipefail
[ $# -ge 2 ] || {
  echo "usage: $0 OUT_DIR BINARY..." >&2
  exit 2
}
out=$1
shift
for f in "$@"; do
  [ -f "$f" ] || {
    echo "collect_libs.sh: no binary $f" >&2
    exit 2
  }
done

# The loader, glibc, and the libraries that come with the GPU machine's driver and CUDA install.
system='^(linux-vdso|linux-gate|ld-linux|libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|libutil\.so|libresolv\.so|libanl\.so|libnsl\.so)'
gpu='^lib(cuda|cudart|cublas|cublasLt|cudnn|nvidia|nccl|nvrtc|nvJitLink|cufft|curand|cusparse|cusolver|nvToolsExt)'

mkdir -p "$out/bin" "$out/lib" "$out/lib-fallback"
gpu_libs=()
for f in "$@"; do
  cp -L "$f" "$out/bin/"
  # "libfoo.so.1 => /path/libfoo.so.1 (0x...)". A library ldd cannot find would leave the bundle
  # incomplete, unless the GPU machine provides it (the driver's libcuda, say).
  missing=$(ldd "$f" | awk '$2 == "=>" && $3 == "not" { print $1 }' | grep -Ev "$gpu" || true)
  if [ -n "$missing" ]; then
    echo "collect_libs.sh: $f needs libraries this machine lacks: $missing" >&2
    exit 1
  fi
  # Libraries the binary loads itself when first needed (cuBLAS: compute/cuda/cublas_library.hpp),
  # which ldd does not list: env.sh finds their folder as for the linked ones.
  for name in $(grep -aoE 'libcublas\.so\.[0-9]+' "$f" | sort -u); do
    [[ " ${gpu_libs[*]-} " == *" $name "* ]] || gpu_libs+=("$name")
  done
  while read -r name path; do
    if [[ $name =~ $system ]]; then
      continue
    elif [[ $name =~ $gpu ]]; then
      [[ " ${gpu_libs[*]-} " == *" $name "* ]] || gpu_libs+=("$name")
    elif [[ $name =~ ^(libstdc\+\+|libgcc_s)\. ]]; then
      [ -e "$out/lib-fallback/$name" ] || cp -L "$path" "$out/lib-fallback/$name"
    else
      [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
    fi
  done < <(ldd "$f" | awk '$2 == "=>" && ($3 ~ /^\// || $3 == "not") { print $1, $3 }')
done

# The newest libstdc++ symbol version the binaries and the bundled libraries use.
glibcxx=$(for f in "$out"/bin/* "$out"/lib/*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBCXX_[0-9][0-9.]*' | sort -uV | tail -1)

{
  echo "# Written by bench/gpu/collect_libs.sh. Source it (bash): . env.sh"
  echo "_b=\$(cd \"\$(dirname \"\${BASH_SOURCE[0]}\")\" && pwd)"
  echo "_gpu_libs=\"${gpu_libs[*]-}\""
  echo "_glibcxx=\"$glibcxx\""
  cat <<'ENV'
_path=$_b/lib
# The loader's cache, read once (no early exit in a pipe: this file may be sourced with pipefail).
_cache=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null)
# libstdc++: the machine's own unless it is older than the one the binaries were built with.
_std=$(printf '%s\n' "$_cache" | awk '/libstdc\+\+\.so\.6 .*x86-64/ && !seen { print $NF; seen = 1 }')
if [ -z "$_std" ] || { [ -n "$_glibcxx" ] && ! grep -qa "$_glibcxx" "$_std"; }; then
  _path=$_path:$_b/lib-fallback
fi
# The CUDA libraries the binaries link: the loader's cache first, then where CUDA and pip put them.
for _l in $_gpu_libs; do
  case $_cache in *"$_l ("*) continue ;; esac
  _found=""
  for _d in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/lib} /usr/local/cuda/lib64 /usr/local/cuda/lib \
    /usr/local/cuda-*/lib64 /usr/local/cuda/targets/*/lib /usr/lib/x86_64-linux-gnu /opt/conda/lib; do
    [ -e "$_d/$_l" ] && _found=$_d && break
  done
  if [ -z "$_found" ]; then
    # pip's nvidia-* wheels (PyTorch's CUDA) keep them in site-packages/nvidia/<package>/lib.
    _found=$(find / \( -path /proc -o -path /sys \) -prune -o -name "$_l" -print 2>/dev/null | sed -n 1p)
    _found=${_found:+$(dirname "$_found")}
  fi
  if [ -n "$_found" ]; then
    case ":$_path:" in *":$_found:"*) ;; *) _path=$_path:$_found ;; esac
  else
    echo "env.sh: $_l is not on this machine: the CUDA backend cannot load (install it, or add its folder to LD_LIBRARY_PATH)" >&2
  fi
done
export LD_LIBRARY_PATH="$_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset _path _l _d _found _std _gpu_libs _glibcxx _cache
ENV
} >"$out/env.sh"
echo "collect_libs.sh: $(ls "$out/bin" | wc -l) binaries, $(ls "$out/lib" | wc -l) libraries in $out/lib," \
  "$(ls "$out/lib-fallback" | wc -l) in lib-fallback; from the GPU machine: ${gpu_libs[*]:-none}"
