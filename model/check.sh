#!/usr/bin/env bash
# Checks the Promela models with Spin. See README.md beside this file.
#
#   model/check.sh         the exhaustive checks of every model (the lock's:
#                          N=3, 2 clients; the waiting queue's: N=3, 2 or 3
#                          waiters; the semaphore's: N=3, 3 clients; the
#                          read-write lock's and LockAll's: N=3, 2 clients)
#                          and every negative control: what `make model`
#                          runs
#   model/check.sh deep    the longer searches: hand-over with extension
#                          and restarts of every kind with extension
#                          (exhaustive), bounded bitstate searches of N=3
#                          with every feature at once and of N=5 with 3
#                          clients, the queue with 3 waiters under every
#                          partition, the semaphore on N=4 and N=5, and
#                          LockAll with 3 clients (exhaustive)
#
# A check passes when Spin's search is complete and finds no violation. A
# control (one safeguard removed) and a finding (the code or the design as it
# was where the model showed a bug) pass only when Spin finds a
# counterexample, and the counterexample violates the property the control
# is for: an assertion, or, for the queue's progress and LockAll's, a cycle
# in which no waiter ever gets the key. Anything else fails the run, loudly,
# with the trail when there is one.
#
# The models' sizes are compiled in; what runs and the safeguards are read
# by the verifier from the environment (QL_<name>), so one verifier is
# compiled per size (and per kind of search) and serves every check and
# control of that size.
#
# MODEL_JOBS (default 2) runs that many compilations or searches at once;
# MODEL_OUT (default model/out) keeps the verifiers, and each run's pan
# output and trail.
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

# Sizes, compiled in: the model, then, for the lock's, masters, clients,
# tokens per client (a client's attempts, hand-overs included), acquire
# rounds, requests held back in the network at once, and (NX=2) two
# extensions of a token out at once, with two TTLs; for the queue's,
# masters and waiters.
S_CONTEND="quorumlock.pml -DNM=3 -DNC=2 -DNK0=1 -DNK1=2 -DMAXR=2 -DDELAYS=1"
S_ONE="quorumlock.pml -DNM=3 -DNC=2 -DNK0=1 -DNK1=1 -DMAXR=1 -DDELAYS=1"
S_HANDOFF="quorumlock.pml -DNM=3 -DNC=2 -DNK0=2 -DNK1=1 -DMAXR=1 -DDELAYS=1"
S_ONE2="quorumlock.pml -DNM=3 -DNC=2 -DNK0=1 -DNK1=1 -DMAXR=1 -DDELAYS=1 -DNX=2"
S_HANDOFF2="quorumlock.pml -DNM=3 -DNC=2 -DNK0=2 -DNK1=1 -DMAXR=1 -DDELAYS=1 -DNX=2"
S_DEEPTTL="quorumlock.pml -DNM=3 -DNC=2 -DNK0=1 -DNK1=1 -DMAXR=1 -DDELAYS=2 -DNX=2"
S_DEEP3="quorumlock.pml -DNM=3 -DNC=2 -DNK0=2 -DNK1=2 -DMAXR=2 -DDELAYS=2"
S_DEEP5="quorumlock.pml -DNM=5 -DNC=3 -DNK0=2 -DNK1=1 -DNK2=1 -DMAXR=2 -DDELAYS=2"
S_QUEUE="queue.pml -DNM=3 -DNW=3"
# The primitives of issue 30: masters and clients.
S_SEM3="semaphore.pml -DNM=3 -DNC=3"
S_SEM4="semaphore.pml -DNM=4 -DNC=3"
S_SEM5="semaphore.pml -DNM=5 -DNC=3"
S_RW="rwlock.pml -DNM=3 -DNC=2"
S_MK2="multikey.pml -DNM=3 -DNC=2"
S_MK3="multikey.pml -DNM=3 -DNC=3"

# The configurations: a size, and what runs in it: who extends (bit per
# client) and how often, who hands over, master restarts and their kinds
# (bit 0 empty, bit 1 with an older copy of the data), and masters the
# guard distrusts for good; with two TTLs, whose extensions may be short.
CONTEND="$S_CONTEND|EXTEND=0 NE=0 HANDOVER=0 NRS=0 NDIS=0"
RESTART="$S_ONE|EXTEND=1 NE=1 HANDOVER=0 NRS=1 RESTARTS=1 NDIS=0"
FAILOVER="$S_ONE|EXTEND=0 NE=0 HANDOVER=0 NRS=1 RESTARTS=3 NDIS=0"
DISTRUST="$S_ONE|EXTEND=1 NE=1 HANDOVER=0 NRS=0 NDIS=1"
HANDOFF="$S_HANDOFF|EXTEND=0 NE=0 HANDOVER=1 NRS=0 NDIS=0"
# The longer searches.
HANDOFFX="$S_HANDOFF|EXTEND=1 NE=1 HANDOVER=1 NRS=0 NDIS=0"
RESTARTX="$S_ONE|EXTEND=1 NE=1 HANDOVER=0 NRS=1 RESTARTS=3 NDIS=0"
DEEP3="$S_DEEP3|EXTEND=3 NE=1 HANDOVER=3 NRS=1 RESTARTS=3 NDIS=0"
DEEP5="$S_DEEP5|EXTEND=7 NE=1 HANDOVER=7 NRS=1 RESTARTS=3 NDIS=1"
# The lock with the waiting queue's refusals.
CONTENDQ="$S_CONTEND|EXTEND=0 NE=0 HANDOVER=0 NRS=0 NDIS=0 QUEUE=1"
RESTARTQ="$S_ONE|EXTEND=1 NE=1 HANDOVER=0 NRS=1 RESTARTS=1 NDIS=0 QUEUE=1"
HANDOFFQ="$S_HANDOFF|EXTEND=0 NE=0 HANDOVER=1 NRS=0 NDIS=0 QUEUE=1"
# Extensions with a shorter TTL than the lock's: two of one lock, the
# second sent while the first is still out. The queue's refusal of a
# retake stands for a second request held back (DELAYS=2 is too large to
# search exhaustively).
SHORTX="$S_ONE2|EXTEND=1 NE=2 SHORT=1 HANDOVER=0 NRS=0 NDIS=0 QUEUE=1"
SHORTRESTART="$S_ONE2|EXTEND=1 NE=1 SHORT=1 HANDOVER=0 NRS=1 RESTARTS=3 NDIS=0"
SHORTHANDOFF="$S_HANDOFF2|EXTEND=1 NE=1 SHORT=1 HANDOVER=1 NRS=0 NDIS=0"
DEEPTTL="$S_DEEPTTL|EXTEND=1 NE=2 SHORT=1 HANDOVER=0 NRS=1 RESTARTS=3 NDIS=0"
# The queue's: waiters, the partition (0 none, 1 any, 2 a waiter reaches
# every master or one), masters that abstain, and the rounds within which
# some waiter must hold the key (0: no bound; a search for a cycle).
QALL="$S_QUEUE|NWAIT=3 PART=0 NAB=0 BOUND=4"
QABSTAIN="$S_QUEUE|NWAIT=3 PART=0 NAB=1 BOUND=4"
QMINORITY="$S_QUEUE|NWAIT=3 PART=2 NAB=0 BOUND=5"
QPARTITION="$S_QUEUE|NWAIT=2 PART=1 NAB=1 BOUND=5"
QEVERY="$S_QUEUE|NWAIT=3 PART=1 NAB=0 BOUND=5"
# The semaphore's, the read-write lock's and LockAll's: permits (K), master
# restarts, lost requests, expiry, and attempts per client (0: no bound);
# for LockAll, the clients' sets (2 bits each: a, b) and who takes b first.
SEM3="$S_SEM3|K=2 NRS=1 LOSS=1 EXPIRY=1 ATTEMPTS=0"
SEM3K1="$S_SEM3|K=1 NRS=1 LOSS=1 EXPIRY=1 ATTEMPTS=0"
SEM4="$S_SEM4|K=2 NRS=1 LOSS=0 EXPIRY=1 ATTEMPTS=0"
SEM5="$S_SEM5|K=2 NRS=1 LOSS=0 EXPIRY=0 ATTEMPTS=1"
SEMONE4="$S_SEM4|K=2 NRS=1 LOSS=0 EXPIRY=0 ATTEMPTS=1"
SEMONE5="$S_SEM5|K=2 NRS=0 LOSS=0 EXPIRY=0 ATTEMPTS=1"
RW="$S_RW|NRS=1 LOSS=1 EXPIRY=1 ATTEMPTS=0"
RWONE="$S_RW|NRS=0 LOSS=0 EXPIRY=0 ATTEMPTS=1"
MK2="$S_MK2|SETS=15 BFIRST=2 LOSS=1 EXPIRY=1 ATTEMPTS=0"
MK3="$S_MK3|SETS=43 BFIRST=2 LOSS=1 EXPIRY=1 ATTEMPTS=0"
MKSTABLE="$S_MK2|SETS=15 BFIRST=2 LOSS=0 EXPIRY=0 ATTEMPTS=0"

# name | kind | size | what runs | switches (and what runs, changed for a
# control) | properties checked (bit n-1 for property n) | what the run must
# show (a search for a cycle when that is "a cycle without progress")
runs_quick=(
	"restart|check|$RESTART||31|no violation"
	"contend|check|$CONTEND||31|no violation"
	"handoff|check|$HANDOFF||31|no violation"
	"failover|check|$FAILOVER||31|no violation"
	"distrust|check|$DISTRUST||31|no violation"
	"guard-off|control|$FAILOVER|GUARD=0 RESTARTS=1|1|property 1"
	"no-fence-write-back|control|$CONTEND|WRITEBACK=0|2|property 2"
	"rollback-tombstone-only-if-not-held|control|$CONTEND|RB_TOMB=0|4|property 3"
	"release-without-waiting|control|$RESTART|REL_WAIT=0|8|property 4"
	"guard-window-too-short|control|$RESTART|GUARD_WIN=0|16|property 5"
	"no-drift-reserve|control|$CONTEND|RESERVE=0|1|property 1"
	"no-clock-seed|control|$RESTART|SEED=0|2|property 2"
	"no-fence-epoch|control|$FAILOVER|EPOCH=0 RESTARTS=2|2|property 2"
	"distrusted-master-votes|control|$DISTRUST|VETO=0 EXTEND=0 NE=0|1|property 1"
	"hand-over-without-waiting|finding|$HANDOFF|HO_WAIT=0|8|property 4"
	"hand-over-without-fall-back|control|$HANDOFF|HO_WAIT=2|8|property 4"
	"hand-over-sent-where-unsure|control|$HANDOFF|HO_WAIT=4|8|property 4"
	"hand-over-release-without-tombstone|control|$HANDOFF|HO_WAIT=5|8|property 4"
	"contend-queue|check|$CONTENDQ||31|no violation"
	"extend-shorter-ttl|check|$SHORTX||31|no violation"
	"extension-shortens-ttl|control|$SHORTX|NOSHORTEN=0|1|property 1"
	"queue|check|$QALL||96|no violation"
	"queue-abstain|check|$QABSTAIN||96|no violation"
	"queue-minority|check|$QMINORITY||96|no violation"
	"queue-partition|check|$QPARTITION||96|no violation"
	"grant-to-non-head|control|$QALL|HEAD=0|32|property 6"
	"queue-without-expiry|control|$QALL|EXPIRY=0|64|property 7"
	"renewing-from-minority|control|$QMINORITY|MINORITY=0|64|property 7"
	"grant-leaves-the-queue|finding|$QPARTITION|KEEP=0 BOUND=0|0|a cycle without progress"
	"minority-rule-counts-answers|finding|$QPARTITION|MINORITY=1 BOUND=0|0|a cycle without progress"
	"semaphore|check|$SEM3||128|no violation"
	"semaphore-one-permit|check|$SEM3K1||128|no violation"
	"semaphore-n4-one-attempt|check|$SEMONE4||128|no violation"
	"permits-over-a-majority|control|$SEM3|PQ=0 NRS=0 LOSS=0 EXPIRY=0 ATTEMPTS=1|128|property 8"
	"permits-over-a-majority-n5|control|$SEMONE5|PQ=0|128|property 8"
	"permits-guard-off|control|$SEMONE4|GUARD=0|128|property 8"
	"permits-guard-window-too-short|control|$SEMONE4|GUARD_WIN=0|128|property 8"
	"rwlock|check|$RW||256|no violation"
	"reader-ignores-writer|control|$RWONE|RWRITER=0|256|property 9"
	"reader-quorum-of-one|control|$RWONE|RQ=1|256|property 9"
	"rwlock-guard-off|control|$RWONE|GUARD=0 NRS=1|256|property 9"
	"lockall|check|$MK2||1536|no violation"
	"lockall-one-key-at-a-time|control|$MKSTABLE|ATOMIC=0 ATTEMPTS=1|1024|property 11"
	"lockall-split-votes|finding|$MKSTABLE||0|a cycle without progress"
)
runs_deep=(
	"restart-every-kind|check|$RESTARTX||31|no violation"
	"handoff-extend|check|$HANDOFFX||31|no violation"
	"deep-n3-every-feature|bounded|$DEEP3||31|no violation"
	"deep-n5-3-clients|bounded|$DEEP5||31|no violation"
	"restart-queue|check|$RESTARTQ||31|no violation"
	"handoff-queue|check|$HANDOFFQ||31|no violation"
	"restart-shorter-ttl|check|$SHORTRESTART||31|no violation"
	"handoff-shorter-ttl|check|$SHORTHANDOFF||31|no violation"
	"deep-two-ttls|bounded|$DEEPTTL||31|no violation"
	"queue-every-partition|check|$QEVERY||96|no violation"
	"semaphore-n4|check|$SEM4||128|no violation"
	"semaphore-n5-one-attempt|check|$SEM5||128|no violation"
	"lockall-3-callers|check|$MK3||1536|no violation"
)
# Minutes each bounded search may take, checked every 100000 states.
deep_minutes="${MODEL_DEEP_MINUTES:-3}"

case "$mode" in
quick) runs=("${runs_quick[@]}") ;;
deep) runs=("${runs_deep[@]}") ;;
*)
	echo "usage: $0 [quick|deep]" >&2
	exit 2
	;;
esac

mkdir -p "$out"

# The model of a size (its first word), and its defines (the rest).
model_of() { echo "${1%% *}"; }
defines_of() { echo "${1#* }"; }

# search_of KIND EXPECT: the kind of search, and so of verifier: bitstate
# (bounded), cycle (a search for a cycle of states that makes no
# progress), or exact.
search_of() {
	if [ "$1" = bounded ]; then
		echo bitstate
	elif [ "$2" = "a cycle without progress" ]; then
		echo cycle
	else
		echo exact
	fi
}

# build_of SEARCH SIZE: the directory of the verifier a search of SEARCH in
# SIZE uses. Exact searches (checks, controls, findings) share one.
build_of() {
	echo "$out/build/$1$(echo "$2" | tr -d ' ' | tr -c 'A-Za-z0-9\n' '_')"
}

# compile DIR SIZE CFLAGS: spin and gcc in DIR. Runs in a job of its own
# (build's), so the cd stays there.
compile() {
	cd "$1"
	# shellcheck disable=SC2086
	spin $(defines_of "$2") -a "$(model_of "$2")" >spin.txt 2>&1 &&
		# shellcheck disable=SC2086
		gcc $3 -DNOFAIR -w -o pan pan.c >gcc.txt 2>&1
}

# build DIR SEARCH SIZE: spin and gcc, once per verifier; DIR/done marks the
# end, whether it compiled or not.
build() {
	local dir=$1 search=$2 size=$3
	# the primitives' models include what they share
	cp "$here/$(model_of "$size")" "$here/primitives.pml" "$dir/"
	# -O2 without the passes that take long on pan.c's one large function
	# and gain the search nothing measurable: half the compile time.
	local opt="-O2 -fno-gcse -fno-tree-pre -fno-ipa-cp -fno-schedule-insns2 -fno-reorder-blocks"
	local cflags
	case "$search" in
	bitstate) cflags="-DSAFETY -DBITSTATE -DFREQ=100000" ;;
	# Complete and exact, for cycles that make no progress (-l).
	cycle) cflags="-DNP -DCOLLAPSE -DMEMLIM=4096" ;;
	# Complete and exact: every state is stored whole.
	*) cflags="-DSAFETY -DCOLLAPSE -DMEMLIM=4096" ;;
	esac
	local TIMEFORMAT=%U
	{ time compile "$dir" "$size" "$opt $cflags" >"$dir/log.txt" 2>&1; } 2>"$dir/cpu" || {
		cat "$dir/spin.txt" "$dir/gcc.txt" >>"$dir/log.txt" 2>/dev/null || true
		rm -f "$dir/pan"
	}
	touch "$dir/done"
}

# environment SETTINGS: QL_ before each name=value.
environment() {
	local w
	for w in $1; do
		printf 'QL_%s ' "$w"
	done
}

# run NAME KIND SIZE SETTINGS SWITCHES CHECK EXPECT: one search in $out/NAME.
run() {
	local name=$1 kind=$2 size=$3 settings=$4 sw=$5 chk=$6 expect=$7
	local dir="$out/$name" b bin search model
	search="$(search_of "$kind" "$expect")"
	model="$(model_of "$size")"
	b="$(build_of "$search" "$size")"
	bin="$b/pan"
	rm -rf "$dir"
	mkdir -p "$dir"
	# its verifier is being compiled: every build was started before any run
	while [ ! -f "$b/done" ]; do
		sleep 0.2
	done
	local envs
	envs="$(environment "$settings $sw CHECK=$chk")"
	printf 'spin %s -a %s\nenv %s./pan\n' "$(defines_of "$size")" "$model" "$envs" >"$dir/defines"
	if [ ! -x "$bin" ]; then
		echo "no verifier: see $(dirname "$bin")/log.txt" >"$dir/log.txt"
		return
	fi
	local panflags depth=100000
	# The primitives' models let every client try again without a bound:
	# a depth-first search goes deep.
	case "$model" in
	semaphore.pml | rwlock.pml | multikey.pml) depth=4000000 ;;
	esac
	case "$kind" in
	check) panflags="-m$depth -w24" ;;
	# Stops at the first counterexample; restarts and held-back requests
	# come first in this order, which finds them sooner.
	control | finding) panflags="-m$depth -w22 -t_reverse" ;;
	bounded) panflags="-m1000000 -w31 -Q$deep_minutes" ;;
	esac
	# A search for a cycle in which no progress is made (-l), in the
	# default order: its first cycle starts from the emptier queues.
	[ "$search" = cycle ] && panflags="-m$depth -w22 -l"
	(
		cd "$dir"
		ln -s "$bin" pan
		local t0 t1 TIMEFORMAT=%U
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		{ time env $envs ./pan $panflags >pan.txt 2>&1; } 2>cpu || true
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >seconds
		if [ -f "$model.trail" ]; then
			# the verifier replays its trail, running the model's printfs
			# shellcheck disable=SC2086
			env $envs ./pan -r 2>&1 |
				grep -E '^(c[0-9]|m[0-9]|w[0-9]|the network|start|round|nothing|PROPERTY)|START OF CYCLE' >trail.txt || true
		fi
	) >"$dir/log.txt" 2>&1
}

# judge NAME KIND EXPECT: prints the verdict line; returns 1 on failure.
judge() {
	local name=$1 kind=$2 expect=$3
	local dir="$out/$name"
	local pan="$dir/pan.txt"
	if [ ! -f "$pan" ]; then
		printf '%-36s FAIL  (did not run)\n' "$name"
		sed 's/^/    /' "$dir/log.txt"
		return 1
	fi
	local errors states depth secs cpu complete=yes
	errors=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$pan" | tail -1)
	states=$(sed -nE 's/^ *([0-9e.+]+) states, stored.*/\1/p' "$pan" | tail -1)
	depth=$(sed -nE 's/.*depth reached ([0-9]+).*/\1/p' "$pan" | tail -1)
	secs=$(cat "$dir/seconds" 2>/dev/null || echo '?')
	cpu=$(tail -1 "$dir/cpu" 2>/dev/null || echo '?')
	if grep -qE 'Search not completed|reached -DMEMLIM|max search depth too small|out of memory' "$pan"; then
		complete=no
	fi
	local got="no violation" steps=""
	if [ "${errors:-0}" != 0 ]; then
		got=$(grep -oE 'PROPERTY [0-9]+ VIOLATED' "$dir/trail.txt" 2>/dev/null | head -1 | sed -E 's/PROPERTY ([0-9]+) VIOLATED/property \1/' || true)
		if [ -z "$got" ] && grep -q 'non-progress cycle' "$pan"; then
			got="a cycle without progress"
		fi
		[ -n "$got" ] || got="an error without a property (see $pan)"
		steps=$(grep -cvE 'PROPERTY|START OF CYCLE' "$dir/trail.txt" 2>/dev/null || true)
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
		printf '%-36s ok    %-8s %10s states  depth %4s  %6ss (cpu %6ss)  %s\n' "$name" "$kind" "${states:-?}" "${depth:-?}" "$secs" "$cpu" "$what"
		return 0
	fi
	printf '%-36s FAIL  %-8s %10s states  depth %4s  %6ss (cpu %6ss)  %s; wanted %s\n' "$name" "$kind" "${states:-?}" "${depth:-?}" "$secs" "$cpu" "$what" "$expect"
	sed 's/^/    /' "$dir/log.txt"
	grep -E 'errors|Search not completed|MEMLIM|memory' "$pan" | sed 's/^/    pan: /' || true
	if [ -f "$dir/trail.txt" ]; then
		sed 's/^/    trail: /' "$dir/trail.txt"
	fi
	return 1
}

# wait_slot: waits until fewer than $jobs background jobs run.
wait_slot() {
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
}

echo "model: Spin $(spin -V | sed -nE 's/Spin Version ([0-9.]+).*/\1/p'), $mode: ${#runs[@]} searches, $jobs at a time; output in $out"
start=$(date +%s)
declare -A built=()
for r in "${runs[@]}"; do
	IFS='|' read -r _ kind size _ _ _ expect <<<"$r"
	search="$(search_of "$kind" "$expect")"
	b="$(build_of "$search" "$size")"
	[ -n "${built[$b]:-}" ] && continue
	built[$b]=1
	rm -rf "$b"
	mkdir -p "$b"
	wait_slot
	build "$b" "$search" "$size" &
done
for r in "${runs[@]}"; do
	IFS='|' read -r name kind size settings sw chk expect <<<"$r"
	wait_slot
	run "$name" "$kind" "$size" "$settings" "$sw" "$chk" "$expect" &
done
wait

failed=0
for r in "${runs[@]}"; do
	IFS='|' read -r name kind _ _ _ _ expect <<<"$r"
	judge "$name" "$kind" "$expect" || failed=$((failed + 1))
done
sum() { awk '{ s += $1 } END { printf "%.0f", s }' "$@" 2>/dev/null; }
cpu_builds=$(for b in "${!built[@]}"; do tail -1 "$b/cpu"; done | sum)
cpu_runs=$(for r in "${runs[@]}"; do tail -1 "$out/${r%%|*}/cpu" 2>/dev/null; done | sum)
echo "model: $(($(date +%s) - start))s; CPU: ${cpu_builds}s compiling ${#built[@]} verifiers, ${cpu_runs}s searching"
if [ "$failed" -ne 0 ]; then
	echo "model: $failed of ${#runs[@]} searches FAILED" >&2
	exit 1
fi
echo "model: all ${#runs[@]} searches as expected"
