#!/usr/bin/env bash
# Issue 29's 4,800-step reference runs on a lent GPU machine: every notebook from 01 to 05 runs there, one job per
# (language, seed), and only the records (the small files notebook 06 reads) come back.
#
#   benchmarks/gpu_reference.sh pack
#       here, at a clean commit: the wheels (gpu-wheels.txt, and fastText for Python 3.12), gensim's two
#       word-similarity files with its metadata (notebook 03 reads nothing else of gensim), git's Debian package
#       in case the machine has none, and .gitmeta/: a clone of HEAD with its commits and trees but no file
#       contents, so the device names the clean commit a record requires. Prints the size that travels (64 MiB).
#   benchmarks/gpu_reference.sh device UNTIL_S RUN...
#       there, with .whl and .gitmeta carried: install; start the runs (LANG:SEED, or LANG:SEED:control to train
#       BERT_FT_PERM too), at most MAX_JOBS at a time, in the order given; record each as its job ends; return
#       UNTIL_S seconds after this call began (keep it 60 s under the call's timeout_s), or once all have ended,
#       with every record so far in $OUT/records.tar.gz. Called again on the same warm machine (within its 30 s),
#       it starts nothing twice and goes on. A run whose job failed three times is reported and left; to try it
#       again, delete runs/logs/NAME.started and NAME.rc.
#   Here afterwards: tar xzf records.tar.gz -C <a folder outside the repository>: records/<run>/ and logs-short/.
#
# Why not train here and carry the models: a language's aligned matrix is 36 MB and a model 42 MB, while a call
# carries 64 MiB (the tracked tree is 15 of them) and brings back 8 files of 16 MiB. So the vectors are trained
# there (fastText on one thread, as here) and the records, a few hundred kB per run, are all that returns.
# PRESET, DEVICE (default reference, cuda), PYTHON and SKIP_WHEELS=1 let the CPU check take the same path.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
PRESET=${PRESET:-reference}
DEVICE=${DEVICE:-cuda}
MAX_JOBS=${MAX_JOBS:-9}
WHEELS=.whl
META=.gitmeta
LOGS=runs/logs
RECORDS=runs/records

pack() {
    local platforms="--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64"
    grep -qx "/$WHEELS/" .git/info/exclude || echo "/$WHEELS/" >> .git/info/exclude
    grep -qx "/$META/" .git/info/exclude || echo "/$META/" >> .git/info/exclude
    # The machine's git has no nbstripout filter, so a notebook counts there as its raw bytes.
    if [ -n "$(git -c filter.nbstripout.clean=cat status --porcelain)" ]; then
        echo "error: commit (and strip) first: the device would find this tree dirty and records would be refused"
        exit 1
    fi
    rm -rf "$WHEELS" "$META" && mkdir -p "$WHEELS/site-extra"
    # fasttext has no wheel for Python 3.12; fasttext-numpy2-wheel builds the same fastText 0.9.2 sources (the
    # project pins 0.9.3 here, whose changes are packaging): the records' `fasttext` version reads null there.
    { grep -v '^#' benchmarks/gpu-wheels.txt; echo fasttext-numpy2-wheel==0.9.2; } | xargs "$PYTHON" -m pip download -q \
        --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d "$WHEELS" $platforms \
        --platform manylinux_2_34_x86_64
    # gensim's wheel is 27 MB; notebook 03 reads two text files of its test data, nothing else.
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
    git -C "$META" remote remove origin  # nothing to fetch from there: a missing object must fail here, as there
    local tracked carried
    tracked=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
    carried=$(du -cb "$WHEELS" "$META" | tail -1 | cut -f1)
    echo "travels: tracked $((tracked / 1048576)) MiB + carried $((carried / 1048576)) MiB of 64 MiB; carry: $WHEELS $META"
}

install() {  # once per machine: the wheels into /tmp/site, git if the machine has none, .git from the metadata
    if [ "${SKIP_WHEELS:-0}" != 1 ]; then
        if [ ! -f /tmp/site/.installed ]; then
            "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
                "$WHEELS"/*.whl
            cp -r "$WHEELS/site-extra/." /tmp/site/ && touch /tmp/site/.installed
        fi
        export PYTHONPATH=/tmp/site
    fi
    if ! command -v git >/dev/null; then
        [ -x /tmp/gitroot/usr/bin/git ] || dpkg -x "$WHEELS/git.deb" /tmp/gitroot
        export PATH=/tmp/gitroot/usr/bin:$PATH GIT_EXEC_PATH=/tmp/gitroot/usr/lib/git-core
    fi
    export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'  # the copy's owner may differ
    if ! git rev-parse -q --verify HEAD >/dev/null 2>&1; then  # none yet, or a half-built one
        rm -rf .git && cp -r "$META/.git" .git && git reset -q
        printf '/%s/\n' "$WHEELS" "$META" >> .git/info/exclude
    fi
    local changed commit
    changed=$(git status --porcelain)
    commit=$("$PYTHON" -c 'from pipeline.runinfo import git_commit; print(git_commit())')
    if [ -n "$changed" ] || [ "$commit" = None ] || [ "${commit%+dirty}" != "$commit" ]; then
        echo "error: this copy is not the clean commit $commit (.gitmeta from another commit? rerun pack):"
        echo "$changed" | head -20
        exit 1
    fi
    echo "code at $commit"
}

run_name() {  # LANG SEED -> the job's run folder (pipeline.layout.run_folder_name)
    if [ "$2" = 0 ]; then echo "$PRESET-$1"; else echo "$PRESET-$1-seed$2"; fi
}

spec_name() {  # LANG:SEED[:control] -> the job's run folder
    local lang seed _
    IFS=: read -r lang seed _ <<< "$1"
    run_name "$lang" "$seed"
}

start_run() {  # SPEC: the job in its own process session (it outlives this call), recorded as soon as it ends
    local lang seed control name
    IFS=: read -r lang seed control <<< "$1"
    name=$(run_name "$lang" "$seed")
    touch "$LOGS/$name.started"
    # Up to three tries: kernels started at the same moment can pick the same port ("ZMQError: Address already in
    # use", seen in the CPU check), and a job run again skips the notebooks it finished.
    OMP_NUM_THREADS=1 setsid bash -c "for try in 1 2 3; do '$PYTHON' -m pipeline.job --preset $PRESET --lang $lang \
        --seeds $seed --device $DEVICE --no-figures ${control:+--control} && break; done; status=\$?; \
        [ \$status = 0 ] && '$PYTHON' -m pipeline.records --runs runs/$name $RECORDS; echo \$status > $LOGS/$name.rc" \
        < /dev/null >> "$LOGS/$name.log" 2>&1 &
    echo "started $name"
    sleep 3  # apart, so that fewer kernels start at once
}

check_specs() {  # every RUN is LANG:SEED or LANG:SEED:control, each run folder named once
    local spec lang seed control names=()
    for spec in "$@"; do
        IFS=: read -r lang seed control <<< "$spec"
        [[ $lang =~ ^[a-z]{2}$ && $seed =~ ^[0-9]+$ && ( -z $control || $control = control ) ]] \
            || { echo "error: $spec: expected LANG:SEED or LANG:SEED:control (en:1:control)"; exit 2; }
        names+=("$(run_name "$lang" "$seed")")
    done
    [ "$(printf '%s\n' "${names[@]}" | sort | uniq -d)" = "" ] || { echo "error: a run is named twice: $*"; exit 2; }
}

run_all() {  # UNTIL_S SPEC...: start what is pending while fewer than MAX_JOBS run, until all ended or UNTIL_S
    local until_s=$1 spec running ended name; shift
    mkdir -p "$LOGS" "$RECORDS"
    while :; do
        running=0 ended=0
        for spec in "$@"; do
            name=$(spec_name "$spec")
            if [ -e "$LOGS/$name.rc" ]; then ended=$((ended + 1)); elif [ -e "$LOGS/$name.started" ]; then
                running=$((running + 1)); fi
        done
        for spec in "$@"; do
            [ $running -lt "$MAX_JOBS" ] && [ $SECONDS -lt $((until_s - 60)) ] || break
            [ -e "$LOGS/$(spec_name "$spec").started" ] && continue
            start_run "$spec" && running=$((running + 1))
        done
        [ $ended -ge $# ] || [ $SECONDS -ge "$until_s" ] && break
        sleep 10
    done
}

collect() {  # every record so far, the logs' ends, and a line per run
    local started name log
    mkdir -p runs/logs-short
    for started in "$LOGS"/*.started; do
        name=$(basename "$started" .started)
        if [ -e "$LOGS/$name.rc" ]; then
            echo "$name: job exit status $(cat "$LOGS/$name.rc"), $([ -d "$RECORDS/$name" ] && echo recorded || echo NOT recorded)"
        else
            echo "$name: running: $(tail -c 300 "$LOGS/$name.log" | tr '\r' '\n' | grep -av "^$" | tail -1)"
        fi
    done
    for log in "$LOGS"/*.log; do tail -c 20000 "$log" > "runs/logs-short/$(basename "$log")"; done
    tar czf "${OUT:?OUT is where the device tool collects files}/records.tar.gz" -C runs records logs-short
    ls -l "$OUT/records.tar.gz"
}

case ${1:-} in
    pack) pack ;;
    device) shift; until_s=$1; shift; check_specs "$@"; install; run_all "$until_s" "$@"; collect ;;
    *) sed -n '2,23p' "$0"; exit 2 ;;
esac
