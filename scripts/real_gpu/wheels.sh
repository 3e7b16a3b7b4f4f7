#!/usr/bin/env bash
# The wheels scripts/real_gpu/run.sh installs on a GPU host with no network (Python 3.12,
# torch 2.11.0 already there), in two folders of under 64 MiB each (.whl1/ for part1, .whl2/
# for part2; list both in .git/info/exclude). Run here, where PyPI answers:
#   bash scripts/real_gpu/wheels.sh
# sglang 0.5.11 pins torch==2.11.0, so it installs --no-deps over the host's torch; sglang-kernel
# is repacked without FA3 (sgl_kernel/flash_ops*.so, imported lazily and never with
# --attention-backend triton), the sm100 kernels and the static libraries (326 MB -> ~30 MB);
# flashinfer_python comes without flashinfer_cubin (no flashinfer kernel runs with
# --sampling-backend pytorch). The rest is what SGLang's server and client import at start
# (found in a Python 3.12 venv here first), and ansible-core to run the project's modules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PART1="sglang-kernel==0.4.2 transformers==5.6.0 tokenizers==0.22.2 ansible-core==2.19.14
  resolvelib==1.2.1 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 typing-extensions==4.16.0"
PART2="sglang==0.5.11 flashinfer-python==0.6.8.post1 apache-tvm-ffi==0.1.15.post2
  fastapi==0.136.3 starlette==1.10.0 uvicorn==0.54.0 pydantic==2.14.4 pydantic-core==2.50.5
  annotated-types==0.8.0 typing-inspection==0.4.5 orjson==3.13.0 pyzmq==27.3.0
  python-multipart==0.0.34 msgspec==0.23.0 setproctitle==1.3.8 pybase64==1.5.1
  partial-json-parser==0.2.1.1.post7 interegular==0.3.3 ipython==9.18.1 traitlets==5.16.1
  openai==2.6.1 distro==1.9.0 jiter==0.19.0 sniffio==1.3.1 openai-harmony==0.0.4 dill==0.4.1
  opentelemetry-api==1.45.2 compressed-tensors==0.20.1 loguru==0.7.3 gguf==0.19.0
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  soundfile==0.13.1 datasets==5.2.0 multiprocess==0.70.19"
download() {  # DEST SPECS...
  local dest=$1; shift
  mkdir -p "$dest"
  # shellcheck disable=SC2086
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_34_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
    -d "$dest" "$@"
}
# shellcheck disable=SC2086
download .whl1 $PART1
# shellcheck disable=SC2086
download .whl2 $PART2
download .whl3 smg==1.13.0  # (run.sh smg; it imports setproctitle, in .whl2)
kernel=$(ls .whl1/sglang_kernel-0.4.2-*.whl)
if unzip -l "$kernel" | grep -q 'sgl_kernel/flash_ops'; then
  work=$(mktemp -d)
  unzip -q "$kernel" -d "$work"
  rm -rf "$work"/sgl_kernel/flash_ops*.so "$work"/sgl_kernel/sm100 "$work"/lib/*.a
  (cd "$work" && rm -f "$OLDPWD/$kernel" && python3 -m zipfile -c "$OLDPWD/$kernel" ./*)
  rm -rf "$work"
fi
du -sh .whl1 .whl2 .whl3
