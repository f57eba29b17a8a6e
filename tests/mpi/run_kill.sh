#!/bin/sh
# run_kill.sh MPIEXEC TEST VERDICT [CASE] — the killed-rank case (CASE
# kill, the default), the stopped-rank case (stop) or the absent-rank
# case (absent) of test_cluster_mpi
# (docs/cluster.md section 9) under MPICH's hydra.
#
# Rank 1 dies by SIGKILL inside a kernel; rank 0 must end its run, its
# destroy and its finalize with PEER_LOST within the peer timeout, and
# writes its verdict to VERDICT before it exits. Two things keep hydra
# from ending rank 0 before it can report:
#   - each rank runs under a shell that waits for it, so hydra sees the
#     dead rank's shell exit with status 137 rather than a process killed
#     by a signal (on a signal death hydra kills every other rank, even
#     with -disable-auto-cleanup);
#   - -disable-auto-cleanup, with SIGUSR1 ignored in the shell and the
#     rank: hydra tells the survivors of a failed rank by SIGUSR1.
# mpiexec's own status is not the verdict (it reports the dead rank):
# the test passes when rank 0 wrote "rank 0: N passed, 0 failed".
set -u
mpiexec=$1
test=$2
verdict=$3
case=${4:-kill}
rm -f "$verdict"
CL_KILL_VERDICT=$verdict "$mpiexec" -disable-auto-cleanup -n 2 \
    sh -c 'trap "" USR1; "$0" "$@"; echo "rank exit status $?" >&2' "$test" "$case"
echo "mpiexec exit status $?"
if [ ! -f "$verdict" ]; then
    echo "run_kill.sh: rank 0 wrote no verdict (killed, or hung past the test's timeout)" >&2
    exit 1
fi
cat "$verdict"
grep -Eq '^rank 0: [1-9][0-9]* passed, 0 failed$' "$verdict"
