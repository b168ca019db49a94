#!/usr/bin/env bash
# The int8 encoder's numerics depend on the CPU's SIMD (AVX2 and AVX-512 VNNI run different
# onnxruntime kernels; docs/evidence.md, "Host numerics"). This runs Python on an emulated CPU
# (qemu-user, default Haswell: AVX2 and FMA, no AVX-512, no VNNI) to see what another host would:
#
#   bench/simd_hosts.sh compare              # the encoders' vectors here and emulated: max |diff|, min cosine
#   bench/simd_hosts.sh pytest ARGS...       # pytest emulated, e.g. tests/reliability/test_hostile_input.py
#   bench/simd_hosts.sh python ARGS...       # any script emulated, e.g. bench/experts_scholars.py --json F
#   (tests with sub-second deadlines or start-up limits fail emulated from slowness alone, and
#   test_the_session_never_uses_the_real_user_cache from the shared cache this sets up)
#   QEMU_CPU=SandyBridge bench/simd_hosts.sh compare   # another model (SandyBridge: AVX, no AVX2)
#
# Needs qemu-user (QEMU_BIN, default qemu-x86_64) and the project installed in VENV (default .venv).
# QEMU 7.2 (Debian 12's qemu-user) emulates AVX2 (no AVX-512) but gets numpy's AVX2 argsort wrong
# (its output is not sorted, so tests/index/test_bm25_build_equivalence.py and
# test_lexical_build_equivalence.py fail under it); QEMU 10.0 (Debian 12's bookworm-backports)
# sorts right and gives the same encoder vectors as 7.2 bit for bit. Beside 7.2, with backports
# in the apt sources:
#   apt-get download -t bookworm-backports qemu-user && dpkg -x qemu-user_*.deb /opt/qemu10
#   QEMU_BIN=/opt/qemu10/usr/bin/qemu-x86_64 bench/simd_hosts.sh ...
# Emulation is 10-40x slower: the export and the `auto` probe are made natively first, in
# PAPERBOT_ENCODER_CACHE_DIR (default a new temp dir), and reused: the exported files are the same
# bytes either way, and so are the graphs onnxruntime optimises (both checked 2026-12-04).
# qemu-user shows the host's /proc/cpuinfo, so the emulated process also reads the host's `auto`
# choice (onnx-int8 here), the variant whose numerics differ.
#
# How: a venv-like folder whose bin/python runs the venv's interpreter under qemu with argv[0]
# set to itself, so sys.prefix finds the venv's packages and sys.executable is the wrapper: the
# `paperbot` subprocesses and spawned workers of the tests are emulated too. pytest runs in one
# process (-n 0) on the prepared cache (PYTEST_XDIST_WORKER makes tests/support/model_cache.py
# take it instead of exporting again; XDG_CACHE_HOME points the subprocesses' default at it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
# Haswell minus the features TCG lacks (each would print a warning on every start, into the stderr tests read)
CPU="${QEMU_CPU:-Haswell,-pcid,-x2apic,-tsc-deadline,-hle,-invpcid,-rtm}"
QEMU_BIN="${QEMU_BIN:-qemu-x86_64}"
command -v "$QEMU_BIN" >/dev/null || { echo "simd_hosts: $QEMU_BIN not found (apt-get install qemu-user)" >&2; exit 2; }
[ "$(uname -m)" = x86_64 ] || { echo "simd_hosts: x86_64 hosts only" >&2; exit 2; }
[ $# -ge 1 ] || { sed -n '6,11p' "$0" >&2; exit 2; }

REAL="$(readlink -f "$VENV/bin/python")"
PYVER="$("$VENV/bin/python" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')"
EMU="$(mktemp -d "${TMPDIR:-/tmp}/simd-hosts-XXXXXX")"
trap 'rm -rf "$EMU"' EXIT
mkdir -p "$EMU/bin" "$EMU/lib/$PYVER" "$EMU/xdg/paperbot"
printf 'home = %s\ninclude-system-site-packages = false\n' "$(dirname "$REAL")" > "$EMU/pyvenv.cfg"
ln -s "$VENV/lib/$PYVER/site-packages" "$EMU/lib/$PYVER/site-packages"
printf '#!/bin/sh\nexec "%s" -cpu "%s" -0 "%s/bin/python" "%s" "$@"\n' "$(command -v "$QEMU_BIN")" "$CPU" "$EMU" "$REAL" > "$EMU/bin/python"
printf '#!%s/bin/python\nimport sys\nfrom bot.cli import main\nsys.exit(main())\n' "$EMU" > "$EMU/bin/paperbot"
chmod +x "$EMU/bin/python" "$EMU/bin/paperbot"
# the venv's other console scripts (`chroma`, started by the tests' Chroma server), emulated too
for script in "$VENV"/bin/*; do
  name="$(basename "$script")"
  [ -e "$EMU/bin/$name" ] || [ -L "$script" ] || ! head -n 1 "$script" | grep -q '^#!.*python' && continue
  { printf '#!%s/bin/python\n' "$EMU"; tail -n +2 "$script"; } > "$EMU/bin/$name"
  chmod +x "$EMU/bin/$name"
done
ln -s python "$EMU/bin/python3"

if [ -z "${PAPERBOT_ENCODER_CACHE_DIR:-}" ]; then
  PAPERBOT_ENCODER_CACHE_DIR="$EMU/encoders"
fi
# the tests' log header names the emulated CPU (qemu-user shows the host's /proc/cpuinfo)
export PAPERBOT_TESTS_EMULATED_CPU="qemu -cpu $CPU"
# the tests' waits for real work, 10 times as long (tests/support/patience.py): emulation is 10-40x slower
export PAPERBOT_TESTS_TIME_SCALE="${PAPERBOT_TESTS_TIME_SCALE:-10}"
export PAPERBOT_ENCODER_CACHE_DIR PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1
ln -s "$PAPERBOT_ENCODER_CACHE_DIR" "$EMU/xdg/paperbot/encoders"
cd "$ROOT"

# natively: the ONNX export, the optimised graphs and the auto choice, in the shared cache
"$VENV/bin/python" - <<'EOF'
import os, tempfile
from pathlib import Path
from retrieval.config import Settings
from retrieval.index.encoders.loading import load_encoder
from retrieval.index.encoders.loading import onnx_encoder
root = Path(os.environ["PAPERBOT_ENCODER_CACHE_DIR"])
load_encoder(Settings(_env_file=None, data_dir=Path(tempfile.mkdtemp()), encoder="auto", chroma_url=None,
                      encoder_cache_dir=root))
for variant in ("onnx", "onnx-int8"):
    onnx_encoder(root, variant)
EOF

case "$1" in
  compare)
    ENCODE='
import json, sys
from pathlib import Path
import numpy as np
from retrieval.index.encoders.loading import onnx_encoder
rows = [json.loads(line) for line in Path("tests/fixtures/answers/papers.jsonl").read_text().splitlines() if line.strip()]
texts = [row["title"] + ". " + (row.get("abstract") or "")[:400] for row in rows]
texts += ["entropy limiters in lattice Boltzmann methods", "magnetophonon resonance in graphene",
          "online Viterbi algorithm and random walks"]
root = Path(__import__("os").environ["PAPERBOT_ENCODER_CACHE_DIR"])
np.savez(sys.argv[1], **{variant: onnx_encoder(root, variant).encode(texts) for variant in ("onnx", "onnx-int8")})
'
    "$VENV/bin/python" -c "$ENCODE" "$EMU/native.npz"
    "$EMU/bin/python" -c "$ENCODE" "$EMU/emulated.npz"
    "$VENV/bin/python" - "$EMU/native.npz" "$EMU/emulated.npz" "$CPU" <<'EOF'
import sys
import numpy as np
native, emulated = np.load(sys.argv[1]), np.load(sys.argv[2])
print(f"this host against qemu -cpu {sys.argv[3].split(',')[0]}, {len(native['onnx'])} texts:")
for variant in native.files:
    a, b = native[variant].astype(np.float64), emulated[variant].astype(np.float64)
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    print(f"  {variant:10s} identical={np.array_equal(native[variant], emulated[variant])!s:5s} "
          f"max|diff|={np.abs(a - b).max():.3g}  cosine min={cosine.min():.6f} mean={cosine.mean():.6f}  "
          f"rows differing {(np.abs(a - b).max(1) > 0).sum()}/{len(a)}")
EOF
    ;;
  pytest)
    shift
    PYTEST_XDIST_WORKER=gw0 XDG_CACHE_HOME="$EMU/xdg" \
      "$EMU/bin/python" -m pytest -n 0 -p no:cacheprovider "$@"
    ;;
  python)
    shift
    XDG_CACHE_HOME="$EMU/xdg" "$EMU/bin/python" "$@"
    ;;
  *)
    sed -n '6,11p' "$0" >&2; exit 2 ;;
esac
