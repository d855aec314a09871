#!/bin/sh
# `mpirun -n P gpuws sources SKY --method workshop` writes the same catalogue, regions, FITS table, label image
# (each rank writes its rows into the file rank 0 stages) and overlay (rank 0 gathers every rank's pixels), byte for
# byte, as one process: on the ranks' devices as one process on its device, and with --max-device-memory on the host
# as one process's host pipeline; on a sky whose height splits into uneven shares and on one of fewer blocks than
# ranks (a rank reads no row). So does `--method extract` (the ranks' rows on whole mesh rows; its background and rms
# maps written by the ranks, and the apertures' columns too, each rank's objects measured on its rows and rows of
# others), with and without a device budget. Ranks that do not see rank 0's staged files (GPUWS_TUNING=
# mpi_rows_to_root=1 makes every rank but 0 such a rank, as on another host) send their rows to rank 0: the same bytes.
#   cli_sources.sh MPIEXEC GPUWS SKY_TOOL WORKDIR P        the comparison with P ranks
#   cli_sources.sh MPIEXEC GPUWS SKY_TOOL WORKDIR failures  bad input: exit 1 or 2 on every rank, nothing written
# MPIEXEC runs with --oversubscribe (more ranks than cores); each run is bounded by `timeout` (a hang fails).
set -u
mpiexec=$1 gpuws=$2 sky=$3 work=$4 what=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || fail "cannot make $work"
mpirun() { n=$1; shift; timeout 60 "$mpiexec" -n "$n" --oversubscribe "$@"; }

"$sky" big.fits 256 700 11 40 || fail "cannot write big.fits"
"$sky" small.fits 256 100 12 6 || fail "cannot write small.fits"

if [ "$what" != failures ]; then
    for img in big small; do
        for where in devices host; do
            budget='' says="on each rank's devices"
            [ $where = host ] && budget="--max-device-memory 64M" says="on the host"
            # shellcheck disable=SC2086 # $budget: no option, or an option and its value
            "$gpuws" sources $img.fits --method workshop $budget --catalog $img.one.csv --regions $img.one.reg \
                --fits-catalog $img.one.cat.fits --labels $img.one.labels.fits --overlay $img.one.png > $img.one.out ||
                fail "one process on $img.fits ($where)"
            # shellcheck disable=SC2086
            mpirun "$what" "$gpuws" sources $img.fits --method workshop $budget --catalog $img.mpi.csv \
                --regions $img.mpi.reg --fits-catalog $img.mpi.cat.fits --labels $img.mpi.labels.fits \
                --overlay $img.mpi.png > $img.mpi.out 2> $img.mpi.err ||
                { cat $img.mpi.err >&2; fail "$what ranks on $img.fits ($where)"; }
            # one rank runs as one process
            [ "$what" = 1 ] || grep -q "^ranks: $what (MPI), .*, the pipeline $says" $img.mpi.out ||
                { cat $img.mpi.out >&2; fail "$img: the ranks did not say they ran the pipeline $says"; }
            for f in csv reg cat.fits labels.fits png; do
                cmp $img.one.$f $img.mpi.$f || fail "$img ($where): $what ranks' .$f differs from one process's"
            done
            # stdout from rank 0 only: one clipping line
            [ "$(grep -c '^sigma clipping' $img.mpi.out)" = 1 ] || fail "$img: not one clipping line on stdout"
            [ "$(grep -c '^sources: ' $img.mpi.out)" = 1 ] || fail "$img: not one count line on stdout"
            [ "$(grep '^sources: ' $img.one.out)" = "$(grep '^sources: ' $img.mpi.out)" ] ||
                fail "$img ($where): source counts differ"
        done
    done
    # --method extract: the ranks' rows on whole rows of 32-pixel meshes, their bands within a budget or not
    for img in big small; do
        for budget in "" "--max-device-memory 200K"; do
            # without a budget a 70-pixel circle too: its rows reach past the next rank's 32 (small.fits' shares)
            apertures=3,6
            [ -z "$budget" ] && apertures=3,6,70
            # shellcheck disable=SC2086
            "$gpuws" sources $img.fits --back-size 32 $budget --phot-apertures $apertures --catalog $img.x1.csv \
                --regions $img.x1.reg --fits-catalog $img.x1.cat.fits --labels $img.x1.labels.fits \
                --background $img.x1.back.fits --rms $img.x1.rms.fits --overlay $img.x1.png > $img.x1.out ||
                fail "one process extracts $img.fits"
            # shellcheck disable=SC2086
            mpirun "$what" "$gpuws" sources $img.fits --back-size 32 $budget --phot-apertures $apertures \
                --catalog $img.xm.csv --regions $img.xm.reg --fits-catalog $img.xm.cat.fits \
                --labels $img.xm.labels.fits --background $img.xm.back.fits --rms $img.xm.rms.fits \
                --overlay $img.xm.png > $img.xm.out 2> $img.xm.err ||
                { cat $img.xm.err >&2; fail "$what ranks extract $img.fits ($budget)"; }
            # the apertures alone: no map gathered to rank 0
            # shellcheck disable=SC2086
            mpirun "$what" "$gpuws" sources $img.fits --back-size 32 $budget --phot-apertures $apertures \
                --catalog $img.xa.csv > $img.xa.out 2> $img.xa.err ||
                { cat $img.xa.err >&2; fail "$what ranks extract $img.fits with apertures alone ($budget)"; }
            cmp $img.x1.csv $img.xa.csv || fail "$img ($budget): $what ranks' catalogue with apertures alone differs"
            [ "$what" = 1 ] || grep -q "^ranks: $what (MPI), rows in shares of whole 32-row mesh rows" $img.xm.out ||
                { cat $img.xm.out >&2; fail "$img: the ranks did not say how they shared the extraction"; }
            for f in csv reg cat.fits labels.fits back.fits rms.fits png; do
                cmp $img.x1.$f $img.xm.$f || fail "$img ($budget): $what ranks' extraction .$f differs"
            done
            [ "$(grep '^objects: ' $img.x1.out)" = "$(grep '^objects: ' $img.xm.out)" ] ||
                fail "$img ($budget): object counts differ"
            head -1 $img.xm.csv | grep -q 'flux_aper_6' || fail "$img ($budget): no aperture columns in $img.xm.csv"
        done
    done
    # the ranks' rows of the maps sent to rank 0 (as from another host than the staged files): the same bytes as the
    # last runs above (big.fits within a device budget); a map to a device, staged in rank 0's $TMPDIR, copied there
    GPUWS_TUNING=mpi_rows_to_root=1 mpirun "$what" "$gpuws" sources big.fits --method workshop \
        --max-device-memory 64M --labels big.sent.labels.fits > big.sent.out 2> big.sent.err ||
        { cat big.sent.err >&2; fail "$what ranks sending their labels to rank 0"; }
    cmp big.one.labels.fits big.sent.labels.fits || fail "$what ranks' labels sent to rank 0 differ"
    GPUWS_TUNING=mpi_rows_to_root=1 mpirun "$what" "$gpuws" sources big.fits --back-size 32 \
        --max-device-memory 200K --background big.sent.back.fits --rms big.sent.rms.fits --labels /dev/null \
        > big.xsent.out 2> big.xsent.err || { cat big.xsent.err >&2; fail "$what ranks sending their maps to rank 0"; }
    for f in back rms; do
        cmp big.x1.$f.fits big.sent.$f.fits || fail "$what ranks' .$f sent to rank 0 differs"
    done
    mpirun "$what" "$gpuws" sources big.fits --back-size 32 --background /dev/null --rms big.null.rms.fits \
        > big.null.out 2> big.null.err || { cat big.null.err >&2; fail "$what ranks writing a map to /dev/null"; }
    cmp big.x1.rms.fits big.null.rms.fits || fail "$what ranks' .rms beside a map to /dev/null differs"
    # many images (--outdir), dealt out over the ranks: each image's files one process's, each numbered among all
    mkdir -p many.one many.mpi
    for i in 1 2 3 4 5; do "$sky" m$i.fits 200 $((40 + 7 * i)) $((20 + i)) 4 || fail "cannot write m$i.fits"; done
    "$gpuws" sources m1.fits m2.fits m3.fits m4.fits m5.fits --back-size 16 --outdir many.one \
        --write catalog,labels,background > many.one.out || fail "one process on many images"
    mpirun "$what" "$gpuws" sources m1.fits m2.fits m3.fits m4.fits m5.fits --back-size 16 --outdir many.mpi \
        --write catalog,labels,background > many.mpi.out 2> many.mpi.err ||
        { cat many.mpi.err >&2; fail "$what ranks on many images"; }
    for f in many.one/*; do cmp "$f" "many.mpi/${f##*/}" || fail "$what ranks' many images: ${f##*/} differs"; done
    [ "$(ls many.mpi | wc -l)" = 15 ] || fail "$what ranks' many images: not 15 files"
    [ "$(grep -c '^\[[1-5]/5\] m[1-5].fits$' many.mpi.out)" = 5 ] || { cat many.mpi.out >&2; fail "not 5 image lines"; }
    closing='5 images: 5 done, 0 failed'
    [ "$what" = 1 ] || closing="$closing ($what ranks)"
    [ "$(grep -c "^$closing\$" many.mpi.out)" = 1 ] || { cat many.mpi.out >&2; fail "many images: no closing line"; }
    echo "ok: $what ranks, the same files as one process, on the devices and on the host, and extracting"
    exit 0
fi

# A missing file: every rank says so and exits 1; no output appears.
mpirun 3 "$gpuws" sources missing.fits --method workshop --catalog m.csv > m.out 2> m.err
rc=$?
[ $rc = 1 ] || { cat m.err >&2; fail "missing file: exit $rc, expected 1"; }
[ "$(grep -c '^gpuws sources: rank [0-2] of 3: .*missing.fits' m.err)" = 3 ] || { cat m.err >&2; fail "missing file: not one line per rank"; }
[ ! -e m.csv ] || fail "missing file: m.csv was written"

# One rank cannot open the file (its working directory lacks it): all exit 1, rank 0 writes nothing.
mkdir -p a b && cp big.fits a/
mpirun 1 -wdir "$work/a" "$gpuws" sources big.fits --method workshop --catalog o.csv : \
    -n 1 -wdir "$work/b" "$gpuws" sources big.fits --method workshop --catalog o.csv > o.out 2> o.err
rc=$?
[ $rc = 1 ] || { cat o.err >&2; fail "one rank without the file: exit $rc, expected 1"; }
grep -q '^gpuws sources: rank 1 of 2: big.fits: cannot open' o.err || { cat o.err >&2; fail "rank 1 did not say why"; }
grep -q '^gpuws sources: rank 0 of 2: stopped: rank 1 failed: big.fits: cannot open' o.err ||
    { cat o.err >&2; fail "rank 0 did not say which rank failed"; }
[ ! -e a/o.csv ] && [ ! -e b/o.csv ] || fail "one rank without the file: o.csv was written"

# Different options on one rank (mpirun's MPMD form): usage error (2) on every rank, nothing written.
mpirun 1 "$gpuws" sources big.fits --method workshop --catalog d.csv : \
    -n 1 "$gpuws" sources big.fits --method workshop --catalog d.csv --threshold 4 > d.out 2> d.err
rc=$?
[ $rc = 2 ] || { cat d.err >&2; fail "different options: exit $rc, expected 2"; }
grep -q '^gpuws sources: rank 1 of 2: rank 1 was given another command line' d.err || { cat d.err >&2; fail "rank 1 silent"; }
grep -q '^gpuws sources: rank 0 of 2: stopped: rank 1 failed' d.err || { cat d.err >&2; fail "rank 0 silent"; }
[ ! -e d.csv ] || fail "different options: d.csv was written"

# What runs in one process: a usage error naming the option on every rank, nothing written.
mpirun 2 "$gpuws" sources --demo --size 64 --catalog demo.csv > l.out 2> l.err
rc=$?
[ $rc = 2 ] || { cat l.err >&2; fail "--demo: exit $rc, expected 2"; }
[ "$(grep -c -- '--demo makes its sky on one device: not under MPI' l.err)" = 2 ] || { cat l.err >&2; fail "--demo: message"; }
[ ! -e demo.csv ] || fail "--demo: an output was written"
# Many images over the ranks, one not FITS: its files not written, the others' are, exit 1 on every rank; an
# --outdir that is missing fails every rank before any work.
mkdir -p few
printf 'not a FITS file' > bad.fits
mpirun 2 "$gpuws" sources big.fits bad.fits small.fits --outdir few --write catalog > few.out 2> few.err
rc=$?
[ $rc = 1 ] || { cat few.err >&2; fail "many images, one bad: exit $rc, expected 1"; }
[ -s few/big.csv ] && [ -s few/small.csv ] && [ ! -e few/bad.csv ] || { ls few >&2; fail "many images, one bad: files"; }
grep -q '^3 images: 2 done, 1 failed (2 ranks)$' few.out || { cat few.out >&2; fail "many images, one bad: closing"; }
grep -q '\[2/3\] bad.fits failed: nothing written for it' few.err || { cat few.err >&2; fail "many images: no failure line"; }
mpirun 3 "$gpuws" sources big.fits small.fits --outdir nowhere --write catalog > nw.out 2> nw.err
rc=$?
[ $rc = 1 ] || { cat nw.err >&2; fail "a missing --outdir: exit $rc, expected 1"; }
[ "$(grep -c '^gpuws sources: rank [0-2] of 3: .*--outdir nowhere: No such file' nw.err)" -ge 1 ] ||
    { cat nw.err >&2; fail "a missing --outdir: message"; }
[ ! -e nowhere ] || fail "a missing --outdir: made"
# The extraction's maps: the parser's usage error, naming the option.
mpirun 2 "$gpuws" sources big.fits --method workshop --background b.fits > b.out 2> b.err
rc=$?
[ $rc = 2 ] || { cat b.err >&2; fail "--background: exit $rc, expected 2"; }
[ "$(grep -c -- '--background applies to --method extract only' b.err)" = 2 ] || { cat b.err >&2; fail "--background: message"; }
[ ! -e b.fits ] || fail "--background: b.fits was written"
# A device budget below the tallest aperture's rows: every rank's apertures are refused (the rank whose objects
# meet it says why, the others that it failed), exit 1, nothing written.
mpirun 2 "$gpuws" sources big.fits --back-size 32 --phot-apertures 3,600 --max-device-memory 1M --catalog p.csv \
    > p.out 2> p.err
rc=$?
[ $rc = 1 ] || { cat p.err >&2; fail "apertures over the budget: exit $rc, expected 1"; }
grep -q '^gpuws sources: rank [01] of 2: the apertures: .*too small' p.err ||
    { cat p.err >&2; fail "apertures over the budget: no rank said why"; }
[ "$(grep -c '^gpuws sources: rank [01] of 2: ' p.err)" = 2 ] || { cat p.err >&2; fail "apertures: not a line per rank"; }
[ ! -e p.csv ] || fail "apertures over the budget: p.csv was written"
# A map the ranks wrote whose destination then fails (a full device): exit 1, the other outputs not written.
mpirun 2 "$gpuws" sources big.fits --back-size 32 --catalog f.csv --rms f.rms.fits --background /dev/full \
    > f.out 2> f.err
rc=$?
[ $rc = 1 ] || { cat f.err >&2; fail "a map to /dev/full: exit $rc, expected 1"; }
grep -q 'No space left on device' f.err || { cat f.err >&2; fail "a map to /dev/full: no reason"; }
[ ! -e f.csv ] && [ ! -e f.rms.fits ] || fail "a map to /dev/full: an output was written"
echo "ok: failures"
