#!/usr/bin/env bash
# Checks the lock's Promela model with Spin. See README.md beside this file.
#
#   model/check.sh         the exhaustive checks (N=3, 2 clients) and every
#                          negative control: what `make model` runs
#   model/check.sh deep    the longer searches: hand-over with extension
#                          (exhaustive), and bounded bitstate searches of
#                          N=3 with every feature at once and of N=5 with
#                          3 clients
#
# A check passes when Spin's search is complete and finds no violation. A
# control (one safeguard removed) and a finding (the code as it is where the
# model shows a bug) pass only when Spin finds a counterexample, and the
# counterexample violates the property the control is for. Anything else
# fails the run, loudly, with the trail when there is one.
#
# MODEL_JOBS (default 2) runs that many searches at once; MODEL_OUT (default
# model/out) keeps each run's pan output and trail.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode="${1:-quick}"
jobs="${MODEL_JOBS:-2}"
out="${MODEL_OUT:-$here/out}"

for tool in spin gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "model: $tool is not installed (Debian: apt-get install spin gcc)" >&2
		exit 1
	fi
done

# The exhaustive configurations: N=3 masters, 2 clients, at most one request
# held back in the network at a time. Each names the tokens per client (a
# client's attempts, hand-overs included), the acquire rounds, who extends
# (bit per client), who hands over, and master restarts.
CONTEND="-DNM=3 -DNC=2 -DNK0=1 -DNK1=2 -DMAXR=2 -DEXTEND=0 -DHANDOVER=0 -DNE=0 -DNRS=0 -DDELAYS=1"
RESTART="-DNM=3 -DNC=2 -DNK0=1 -DNK1=1 -DMAXR=1 -DEXTEND=1 -DHANDOVER=0 -DNE=1 -DNRS=1 -DDELAYS=1"
HANDOFF="-DNM=3 -DNC=2 -DNK0=2 -DNK1=1 -DMAXR=1 -DEXTEND=0 -DHANDOVER=1 -DNE=0 -DNRS=0 -DDELAYS=1"
# The longer searches.
HANDOFFX="-DNM=3 -DNC=2 -DNK0=2 -DNK1=1 -DMAXR=1 -DEXTEND=1 -DHANDOVER=1 -DNE=1 -DNRS=0 -DDELAYS=1"
DEEP3="-DNM=3 -DNC=2 -DNK0=2 -DNK1=2 -DMAXR=2 -DEXTEND=3 -DHANDOVER=3 -DNE=1 -DNRS=1 -DDELAYS=2"
DEEP5="-DNM=5 -DNC=3 -DNK0=2 -DNK1=1 -DNK2=1 -DMAXR=2 -DEXTEND=7 -DHANDOVER=7 -DNE=1 -DNRS=1 -DDELAYS=2"

# name | kind | configuration | switches | properties checked (bit n-1 for
# property n) | what the run must show
runs_quick=(
	"contend|check|$CONTEND||31|no violation"
	"restart|check|$RESTART||31|no violation"
	"handoff|check|$HANDOFF||31|no violation"
	"guard-off|control|$RESTART|-DGUARD=0|1|property 1"
	"no-fence-write-back|control|$CONTEND|-DWRITEBACK=0|2|property 2"
	"rollback-tombstone-only-if-not-held|control|$CONTEND|-DRB_TOMB=0|4|property 3"
	"release-without-waiting|control|$RESTART|-DREL_WAIT=0|8|property 4"
	"guard-window-too-short|control|$RESTART|-DGUARD_WIN=0|16|property 5"
	"no-drift-reserve|control|$CONTEND|-DRESERVE=0|1|property 1"
	"no-clock-seed|control|$RESTART|-DSEED=0|2|property 2"
	"hand-over-without-waiting|finding|$HANDOFF|-DHO_WAIT=0|8|property 4"
)
runs_deep=(
	"handoff-extend|check|$HANDOFFX||31|no violation"
	"deep-n3-every-feature|bounded|$DEEP3||31|no violation"
	"deep-n5-3-clients|bounded|$DEEP5||31|no violation"
)
# Minutes each bounded search may take.
deep_minutes="${MODEL_DEEP_MINUTES:-4}"

case "$mode" in
quick) runs=("${runs_quick[@]}") ;;
deep) runs=("${runs_deep[@]}") ;;
*)
	echo "usage: $0 [quick|deep]" >&2
	exit 2
	;;
esac

mkdir -p "$out"

# run NAME KIND CONFIG SWITCHES CHECK: one search in $out/NAME.
run() {
	local name=$1 kind=$2 cfg=$3 sw=$4 chk=$5
	local dir="$out/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$here/quorumlock.pml" "$dir/"
	local defs="$cfg $sw -DCHECK=$chk"
	echo "$defs" >"$dir/defines"
	local opt cflags panflags
	case "$kind" in
	check)
		# Complete and exact: every state is stored whole.
		opt=-O2 cflags="-DSAFETY -DCOLLAPSE -DMEMLIM=4096" panflags="-m100000 -w24"
		;;
	control | finding)
		# Stops at the first counterexample; restarts and held-back
		# requests come first in this order, which finds them sooner.
		opt=-O1 cflags="-DSAFETY -DCOLLAPSE -DMEMLIM=4096" panflags="-m100000 -w22 -t_reverse"
		;;
	bounded)
		opt=-O2 cflags="-DSAFETY -DBITSTATE" panflags="-m1000000 -w31 -Q$deep_minutes"
		;;
	esac
	(
		cd "$dir"
		# shellcheck disable=SC2086
		spin $defs -a quorumlock.pml >spin.txt 2>&1 || {
			cat spin.txt
			exit 1
		}
		# shellcheck disable=SC2086
		gcc $opt $cflags -DNOFAIR -w -o pan pan.c >gcc.txt 2>&1 || {
			cat gcc.txt
			exit 1
		}
		local t0 t1
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		./pan $panflags >pan.txt 2>&1 || true
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >seconds
		if [ -f quorumlock.pml.trail ]; then
			# shellcheck disable=SC2086
			spin -t $defs quorumlock.pml 2>&1 |
				grep -E '^[[:space:]]+(c[0-9]|m[0-9]|the network|PROPERTY)' |
				sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//; s/ ,/,/g' >trail.txt || true
		fi
	) >"$dir/log.txt" 2>&1
}

# judge NAME KIND EXPECT: prints the verdict line; returns 1 on failure.
judge() {
	local name=$1 kind=$2 expect=$3
	local dir="$out/$name"
	local pan="$dir/pan.txt"
	if [ ! -f "$pan" ]; then
		printf '%-40s FAIL  (did not run)\n' "$name"
		sed 's/^/    /' "$dir/log.txt"
		return 1
	fi
	local errors states depth secs complete=yes
	errors=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$pan" | tail -1)
	states=$(sed -nE 's/^ *([0-9e.+]+) states, stored.*/\1/p' "$pan" | tail -1)
	depth=$(sed -nE 's/.*depth reached ([0-9]+).*/\1/p' "$pan" | tail -1)
	secs=$(cat "$dir/seconds" 2>/dev/null || echo '?')
	if grep -qE 'Search not completed|reached -DMEMLIM|max search depth too small|out of memory' "$pan"; then
		complete=no
	fi
	local got="no violation" steps=""
	if [ "${errors:-0}" != 0 ]; then
		got=$(grep -oE 'PROPERTY [0-9] VIOLATED' "$dir/trail.txt" 2>/dev/null | head -1 | sed -E 's/PROPERTY ([0-9]) VIOLATED/property \1/' || true)
		[ -n "$got" ] || got="an error without a property (see $pan)"
		steps=$(grep -cvE 'PROPERTY' "$dir/trail.txt" 2>/dev/null || true)
	fi
	local ok=no
	case "$kind" in
	check) [ "$got" = "$expect" ] && [ "$complete" = yes ] && ok=yes ;;
	bounded) [ "$got" = "$expect" ] && ok=yes ;;
	control | finding) [ "$got" = "$expect" ] && ok=yes ;;
	esac
	local what="$got"
	[ -n "$steps" ] && what="$got, trail of $steps events"
	[ "$kind" = check ] && [ "$complete" = no ] && what="$what, search INCOMPLETE"
	if [ "$ok" = yes ]; then
		printf '%-40s ok    %-8s %12s states  depth %6s  %7ss  %s\n' "$name" "$kind" "${states:-?}" "${depth:-?}" "$secs" "$what"
		return 0
	fi
	printf '%-40s FAIL  %-8s %12s states  depth %6s  %7ss  %s; wanted %s\n' "$name" "$kind" "${states:-?}" "${depth:-?}" "$secs" "$what" "$expect"
	sed 's/^/    /' "$dir/log.txt"
	grep -E 'errors|Search not completed|MEMLIM|memory' "$pan" | sed 's/^/    pan: /' || true
	if [ -f "$dir/trail.txt" ]; then
		sed 's/^/    trail: /' "$dir/trail.txt"
	fi
	return 1
}

echo "model: Spin $(spin -V | sed -nE 's/Spin Version ([0-9.]+).*/\1/p'), $mode: ${#runs[@]} searches, $jobs at a time; output in $out"
start=$(date +%s)
pids=()
for r in "${runs[@]}"; do
	IFS='|' read -r name kind cfg sw chk _ <<<"$r"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	run "$name" "$kind" "$cfg" "$sw" "$chk" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || true
done

failed=0
for r in "${runs[@]}"; do
	IFS='|' read -r name kind _ _ _ expect <<<"$r"
	judge "$name" "$kind" "$expect" || failed=$((failed + 1))
done
echo "model: $(($(date +%s) - start))s"
if [ "$failed" -ne 0 ]; then
	echo "model: $failed of ${#runs[@]} searches FAILED" >&2
	exit 1
fi
echo "model: all ${#runs[@]} searches as expected"
