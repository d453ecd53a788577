#!/usr/bin/env bash
# Prepares benchmarks/gpu_check.py for one call on a lent GPU machine (docs/performance.md,
# "Running the GPU check"). Run it HERE, in the checkout the session sends, with PyPI
# reachable: the GPU machine reaches no registry, so what its image lacks travels as wheels.
#
#   bash benchmarks/gpu_prepare.sh [SHARED_DATA_DIR]    # default ../shared/data
#
# 1. ignores .whl/ and .gpu/ (git's info/exclude: they travel as `carry`, never committed);
# 2. downloads the wheels of the Python 3.12 packages the image lacks into .whl/;
# 3. copies the ES bars into .gpu/ (../shared does not travel);
# 4. prints the device call: its command, carry and timeout.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
data_dir=${1:-../shared/data}
bars=ES_FUT_60d_5min.parquet

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for path in /.whl/ /.gpu/; do
    grep -qxF "$path" "$exclude" 2>/dev/null || echo "$path" >>"$exclude"
done

# What the image ('cuda', Python 3.12, docs: the device README's package list) lacks, at the
# versions requirements-ci.txt pins. Pure-Python wheels unless said.
#   the CLI (bench-memory): jsonargparse, docstring-parser
#   the exchange calendar of the bars' known inputs: pandas_market_calendars and its needs
#   `pytest -m gpu tests` collects every test module: arch (compiled), optuna and its needs
#   the throughput comparison: pytorch-forecasting and scikit-base
wheels=(
    jsonargparse==4.53.0
    docstring_parser==0.18.0
    pandas_market_calendars==5.5.0
    exchange_calendars==4.13.2
    korean_lunar_calendar==0.4.0
    pyluach==2.3.0
    tzdata==2026.6
    arch==8.0.0
    optuna==5.1.0
    SQLAlchemy==2.1.9
    alembic==1.20.1
    Mako==1.4.3
    colorlog==6.12.0
    pytorch-forecasting==1.8.0
    scikit-base==1.0.2
)
mkdir -p .whl .gpu
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
    manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
for spec in "${wheels[@]}"; do
    name=${spec%%==*}
    norm=$(echo "$name" | tr 'A-Z-' 'a-z_')
    if compgen -G ".whl/${norm}-${spec##*==}-*.whl" >/dev/null; then
        continue  # already here: a rerun downloads nothing (another version: the check below)
    fi
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp "${platforms[@]}" -d .whl "$spec"
done
# one version of each: two of a name stop the whole install there
dupes=$(ls .whl/*.whl | xargs -n1 basename | cut -d- -f1 | tr 'A-Z-' 'a-z_' | sort | uniq -d)
if [ -n "$dupes" ]; then
    echo "gpu_prepare: several versions in .whl of: $dupes; delete all but one" >&2
    exit 1
fi

cp -f "$data_dir/$bars" .gpu/
chmod u+w ".gpu/$bars"
# the commit measured, for the report: the copy sent to the GPU machine may lack .git
# (run this script after committing what is to be measured)
git describe --always --dirty >.gpu/commit

# what travels (tracked and untracked-not-ignored files, the carried folders) <= 64 MiB
repo_bytes=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)  # one total
carry_bytes=$(du -cb .whl .gpu | tail -1 | cut -f1)
total=$((repo_bytes + carry_bytes))
echo "gpu_prepare: repo $((repo_bytes >> 20)) MiB + .whl/.gpu $((carry_bytes >> 20)) MiB" \
    "= $((total >> 20)) MiB of the 64 MiB that may travel" >&2
if [ "$total" -gt $((60 << 20)) ]; then
    echo "gpu_prepare: too big to travel; drop wheels from .whl" >&2
    exit 1
fi

cmd="python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade"
# foxhunt is not installed there: its sources come first on the path (the children's too)
cmd+=" --target /tmp/site .whl/*.whl && export PYTHONPATH=\$PWD/src:/tmp/site || exit;"
# pytorch-forecasting and scikit-base install top-level docs/ examples/ tests/ folders: a
# `tests` on the path would shadow nothing of ours today, but need not be there at all
cmd+=" rm -rf /tmp/site/{docs,examples,extension_templates,tests};"
cmd+=" nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv;"
cmd+=" PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --out \$OUT"
cmd+=" --parquet-file .gpu/$bars 2>&1 | tee \$OUT/gpu_check.log"
if [ ${#cmd} -gt 2000 ]; then
    echo "gpu_prepare: the command is ${#cmd} characters, over the 2000 a call takes" >&2
    exit 1
fi
cat <<EOF
The device call (one run; the check bounds itself to --budget-s 480 s, the install and
start-up take about half a minute more):
  command:   $cmd
  carry:     [".whl", ".gpu"]
  timeout_s: 570
EOF
