#!/usr/bin/env bash
# Static instruction counts of the fused kernel's functions on the H100
# (sm_90), without a GPU: the committed PTX is assembled by the CUDA kit's
# ptxas (.ci/cudaenv.sh) and disassembled by nvdisasm, which this script
# takes from Debian's nvidia-cuda-toolkit package into the kit (once,
# ~84 MB download). For each function whose name matches REGEX (default:
# the fused kernel's sweeps and fills), it prints the number of
# instructions, the registers and spills ptxas reports, and every loop
# (a backward branch): its first and last instruction, its length, and its
# double-precision arithmetic instructions (DFMA, DADD, DMUL).
#
#   bash bench/sass.sh ['fusedLSE|fusedWeighted']
#
# What a loop costs on the GPU depends on how often it runs and on its
# latencies: these counts compare versions of a function, they do not
# time it.
set -euo pipefail
cd "$(dirname "$0")/.."
re=${1:-'fused(LSE|Weighted|Fill)'}
. .ci/cudaenv.sh
kit=${SHM_CUDA_KIT:-${XDG_CACHE_HOME:-$HOME/.cache}/shm-cudakit}
dis=$kit/root/usr/bin/nvdisasm
if [ ! -x "$dis" ]; then
  a=$(mktemp -d)
  trap 'rm -rf "$a"' EXIT
  mkdir -p "$a/lists/partial" "$a/debs"
  cat >"$a/nf.sources" <<S
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
S
  o=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$a" -o Dir::State::Lists="$a/lists")
  apt-get "${o[@]}" update -qq
  (cd "$a/debs" && apt-get "${o[@]}" download nvidia-cuda-toolkit 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  dpkg-deb --fsys-tarfile "$a"/debs/nvidia-cuda-toolkit_*.deb | tar -x -C "$kit/root" ./usr/bin/nvdisasm
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kit/root/usr/bin/ptxas" -arch=sm_90 -v -o "$tmp/k.cubin" stdlib/ot/cuda/kernels/sinkhorn.ptx 2>"$tmp/ptxas.txt"
"$dis" "$tmp/k.cubin" >"$tmp/k.sass"
python3 - "$tmp/k.sass" "$tmp/ptxas.txt" "$re" <<'EOF'
import re, sys

sass, info, pattern = open(sys.argv[1]).read().split("\n"), open(sys.argv[2]).read().split("\n"), sys.argv[3]
# ptxas -v: "Function properties for NAME" then "N bytes stack frame, ...".
props = {}
for i, l in enumerate(info):
    m = re.search(r"Function properties for (\S+)", l)
    if m and i + 1 < len(info):
        props[m.group(1)] = info[i + 1].strip()
starts = [(i, l.split()[1].split(",")[0]) for i, l in enumerate(sass) if l.strip().startswith(".type") and "@function" in l]
for k, (start, name) in enumerate(starts):
    if not re.search(pattern, name):
        continue
    end = starts[k + 1][0] if k + 1 < len(starts) else len(sass)
    instrs, labels = [], {}
    for l in sass[start:end]:
        m = re.match(r"^\s*(\.L_x_\d+):", l)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", l)
        if m:
            instrs.append(m.group(1))
    short = name.replace("$fused$", "")
    print(f"{short}: {len(instrs)} instructions; {props.get(short, '')}")
    for j, ins in enumerate(instrs):
        m = re.search(r"BRA\s+(?:`\()?(\.L_x_\d+)", ins)
        if m and labels.get(m.group(1), j + 1) <= j:
            s = labels[m.group(1)]
            body = instrs[s : j + 1]
            fp = sum(bool(re.search(r"\b(DFMA|DADD|DMUL)\b", x)) for x in body)
            print(f"  loop [{s}, {j}]: {j - s + 1} instructions, {fp} fp64")
EOF
