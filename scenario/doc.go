// Package scenario holds the post's experiments, each reproduced as a run
// of the deterministic simulator (package sim) with the post's figures
// beside the simulator's.
//
// # API
//
// A [Scenario] is one experiment: its name, a one-line summary and what the
// post measured. [Scenarios] lists them all in a fixed order, [Names] gives
// their names for usage messages, and [Lookup] finds one by name (an
// unknown name is an error wrapping [ErrUnknown] that lists the valid
// ones). [Scenario.Run] runs it with [Options]: another variant of the
// algorithm (package lease's variants; by default the post's "seed"
// program, or "seed-naive" for naive-race) and other lease, renew and watch
// intervals (by default the post's 9 s, 3 s and 3 s). It returns a
// [Result]: the text leaselab prints, the fields of its JSON object and,
// for the scenarios that show one run, that run's trace. [RaceTrial]
// returns the simulator setup of one trial of the race experiments, for
// tests that run more trials than the scenario does.
//
// From the command line, leaselab scenario NAME [-variant V] [-json]
// [-trace] [-lease D -renew D -watch D] runs one.
//
// # Scenarios
//
//   - steady: three processes, the post's pids and start times; one
//     leader renews every 3 s and two watchers see it.
//   - kill-leader: the leader gets SIGKILL at 12.00 s; reports the
//     leaderless gap until the next leader (the post: 9.53 s).
//   - term-leader: the leader gets SIGTERM at 12.01 s and releases the
//     lease; reports the leaderless gap (the post: 0.31 s).
//   - empty-file: an empty lock file exists before three processes start;
//     the seed program cannot read it and never elects a leader.
//   - naive-race: 30 trials of 30 processes started at once on the
//     variant that stats, then creates; counts trials with more than one
//     leader.
//   - excl-race: the same trials on the variant that creates with O_EXCL;
//     every trial must elect exactly one leader.
//   - takeover-race: two watchers started together read the dead leader's
//     expired lease at once; on the seed program both take over.
//   - worst-gap: searches the leader's start, the watchers' offsets and the
//     kill instant for the longest leaderless gap after a SIGKILL, then
//     kills the leader right after each system call of a renewal and
//     reports which kills wedge.
//
// # Golden files
//
// Each scenario's whole output (its text, then its JSON object) is kept
// under testdata/ as scenario-NAME.golden, and the failovers run on the
// reference algorithm as scenario-kill-leader-reference.golden and
// scenario-term-leader-reference.golden; TestScenariosGolden compares them
// with fresh runs. After an intended change, regenerate them all with
//
//	go test ./scenario -run Golden -update
//
// or one with -run 'Golden/^NAME$' (NAME-VARIANT for the reference ones),
// and read the diff before committing it. TestScenariosReproducePost
// checks that the post's own log lines appear verbatim.
package scenario
