#!/usr/bin/env bash
# Issue 29's 4,800-step reference runs on a lent GPU machine: every notebook from 01 to 05 runs there, one job per
# (language, seed) side by side, and only the records (the small files notebook 06 reads) come back.
#
#   benchmarks/gpu_reference.sh pack
#       here, once per commit: the wheels (gpu-wheels.txt, and fastText for Python 3.12), gensim's two word-similarity
#       files with its metadata (notebook 03 reads nothing else of gensim), git's Debian package, and .gitmeta/: a
#       clone of HEAD with its commit and trees but no file contents, so the device names the clean commit that
#       a record requires. Prints the size that travels (the device tool's limit is 64 MiB).
#   benchmarks/gpu_reference.sh device SECONDS RUN...
#       there, with .whl and .gitmeta carried: install, start the job of each RUN not yet started (LANG:SEED, or
#       LANG:SEED:control to train BERT_FT_PERM too), wait until all have ended or SECONDS have passed, then
#       record every finished run into $OUT/records.tar.gz (with the jobs' logs). Calling it again on the same warm
#       machine starts nothing twice: it waits for the jobs still running and records what has finished since.
#   Here afterwards: tar xzf records.tar.gz, then move each record under figures/reference/ and run
#       `.venv/bin/python -m pipeline.records figures/reference` (the manifest).
#
# Why not train here and carry the models: a language's aligned matrix is 36 MB and a model 42 MB, while a call
# carries 64 MiB (the tracked tree is 16 of them) and brings back 8 files of 16 MiB. So the vectors are trained
# there (fastText on one thread, as here) and the records, a few hundred kB per run, are all that returns.
# PRESET and DEVICE (default reference, cuda) and PYTHON let the CPU check run the same code path with `smoke`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
PRESET=${PRESET:-reference}
DEVICE=${DEVICE:-cuda}
WHEELS=.whl
META=.gitmeta

pack() {
    local platforms="--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64"
    grep -qx "/$WHEELS/" .git/info/exclude || echo "/$WHEELS/" >> .git/info/exclude
    grep -qx "/$META/" .git/info/exclude || echo "/$META/" >> .git/info/exclude
    [ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "error: commit first: records name a clean commit"; exit 1; }
    rm -rf "$WHEELS" "$META" && mkdir -p "$WHEELS/site-extra"
    # fasttext has no wheel for Python 3.12; fasttext-numpy2-wheel builds the same fastText 0.9.2 sources (the
    # project pins 0.9.3 here, whose changes are packaging): notebook 03's manifest records the version it ran.
    { grep -v '^#' benchmarks/gpu-wheels.txt; echo fasttext-numpy2-wheel==0.9.2; } | xargs "$PYTHON" -m pip download -q \
        --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d "$WHEELS" $platforms --platform manylinux_2_34_x86_64
    # gensim's wheel is 27 MB; notebook 03 reads two text files of its test data and its version, nothing else.
    local tmp; tmp=$(mktemp -d)
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d "$tmp" \
        $platforms gensim==4.4.0
    (cd "$WHEELS/site-extra" && unzip -q "$tmp"/gensim-*.whl 'gensim-4.4.0.dist-info/METADATA' \
        'gensim/test/test_data/wordsim353.tsv' 'gensim/test/test_data/simlex999.txt')
    : > "$WHEELS/site-extra/gensim-4.4.0.dist-info/RECORD"
    (cd "$tmp" && apt-get download -q git >/dev/null 2>&1) && mv "$tmp"/git_*.deb "$WHEELS/git.deb"
    rm -rf "$tmp"
    git clone -q --depth 1 --filter=blob:none --no-checkout -u 'git -c uploadpack.allowFilter=true upload-pack' \
        "file://$PWD" "$META"
    local tracked; tracked=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
    local carried; carried=$(du -cb "$WHEELS" "$META" | tail -1 | cut -f1)
    echo "travels: tracked $((tracked / 1048576)) MiB + carried $((carried / 1048576)) MiB of 64 MiB; carry: $WHEELS $META"
}

install() {  # once per machine: the wheels into /tmp/site, git if the machine has none, .git from the metadata
    if [ ! -f /tmp/site/.installed ]; then
        if [ "${SKIP_WHEELS:-0}" != 1 ]; then
            "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
                "$WHEELS"/*.whl
            cp -r "$WHEELS/site-extra/." /tmp/site/
        fi
        mkdir -p /tmp/site && touch /tmp/site/.installed
    fi
    [ "${SKIP_WHEELS:-0}" = 1 ] || export PYTHONPATH=/tmp/site
    if ! command -v git >/dev/null; then
        dpkg -x "$WHEELS/git.deb" /tmp/gitroot
        export PATH=/tmp/gitroot/usr/bin:$PATH GIT_EXEC_PATH=/tmp/gitroot/usr/lib/git-core
    fi
    if [ ! -d .git ]; then
        cp -r "$META/.git" .git && git reset -q
    fi
    local commit; commit=$("$PYTHON" -c 'from pipeline.runinfo import git_commit; print(git_commit())')
    case $commit in
        None|*dirty*) echo "error: this copy is not a clean commit ($commit): a record would be refused"; exit 1 ;;
    esac
    echo "code at $commit"
}

run_name() {  # LANG SEED -> the job's run folder name
    if [ "$2" = 0 ]; then echo "$PRESET-$1"; else echo "$PRESET-$1-seed$2"; fi
}

start_runs() {  # one job per run, each in its own process session, so a later call finds it still running
    local spec lang seed control name
    mkdir -p runs/logs
    for spec in "$@"; do
        IFS=: read -r lang seed control <<< "$spec"
        name=$(run_name "$lang" "$seed")
        [ -e "runs/logs/$name.started" ] && continue
        touch "runs/logs/$name.started"
        # Up to three tries: kernels started at the same moment can pick the same port ("ZMQError: Address already
        # in use", seen in the CPU check), and a job run again skips the notebooks it finished.
        OMP_NUM_THREADS=1 setsid bash -c "for try in 1 2 3; do '$PYTHON' -m pipeline.job --preset $PRESET --lang $lang \
            --seeds $seed --device $DEVICE --no-figures ${control:+--control} >> runs/logs/$name.log 2>&1 && break; \
            done; echo \$? > runs/logs/$name.rc" &
        echo "started $name"
        sleep 3  # apart, so that fewer kernels start at once
    done
}

wait_and_record() {  # SECONDS: wait for the jobs, then record each that ended well (records refuse unfinished runs)
    local deadline=$((SECONDS + $1)) started
    while [ $SECONDS -lt $deadline ]; do
        started=$(ls runs/logs/*.started 2>/dev/null | wc -l)
        [ "$(ls runs/logs/*.rc 2>/dev/null | wc -l)" -ge "$started" ] && break
        sleep 10
    done
    local rc_file name
    for rc_file in runs/logs/*.rc; do
        [ -e "$rc_file" ] || continue
        name=$(basename "$rc_file" .rc)
        echo "$name: job exit status $(cat "$rc_file")"
        if [ "$(cat "$rc_file")" = 0 ] && [ ! -d "records/$name" ]; then
            "$PYTHON" -m pipeline.records --runs "runs/$name" records || true
        fi
    done
    for started in runs/logs/*.started; do
        name=$(basename "$started" .started)
        [ -e "runs/logs/$name.rc" ] || echo "$name: still running: $(tail -c 200 "runs/logs/$name.log" | tr '\r' '\n' | tail -1)"
    done
    mkdir -p logs-short && for log in runs/logs/*.log; do tail -c 20000 "$log" > "logs-short/$(basename "$log")"; done
    tar czf "${OUT:?OUT is where the device tool collects files}/records.tar.gz" $(ls -d records 2>/dev/null) logs-short
    ls -la "$OUT"
}

case ${1:-} in
    pack) pack ;;
    device) shift; seconds=$1; shift; install; start_runs "$@"; wait_and_record "$seconds" ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
esac
