// Package trace is the vocabulary of a run: what happened, step by step,
// in a form that the simulator writes, a recorder of real processes
// writes, and the checks read. It imports nothing of the project but
// lease's value types (Record, Role, Msg, Config), so that checks and
// recorders depend on it and not on the simulator.
//
//   - [Trace]: a run's [Event] values in order, its processes ([ProcInfo])
//     and their activities, the files it left ([File]), and what ran
//     ([Run]: variant, lease configuration, lock, whether the store is a
//     server's, and the setup line, [Trace.Setup]). Strings live in the
//     trace's arena ([Str], [Trace.S]), so events hold no pointers;
//     [New] and [Trace.Release] recycle a trace's memory.
//   - [Event]: one step, of a [Kind] (a system call [Op], a log line, a
//     clock read, a role, a fault, an exit, a store call and its return,
//     a lead, a fenced action, ...). Its numbered fields are read through
//     accessors named for what they hold: [Event.Record], [Event.Writer],
//     [Event.FaultKind], [Event.Missed], [Event.ExitCode] ([ExitKilled],
//     [ExitTerminated]), [Event.Epoch], [Event.Deadline],
//     [Event.Accepted], [Event.ExpiredAt]; [Fault] and [Event.SetRecord]
//     write them.
//   - Store outcomes: [StoreOp] and [StoreRes], and [Classify], which maps
//     a Store error to the outcome the linearizability check reads.
//   - [FaultKind]: the faults a run can suffer ([Kill], [Term], [Stop],
//     [Cont], [Skew], [Drift], [Jump], [FSError], [Power]).
//   - The printer: [Trace.WriteLog] (the post's log format),
//     [Trace.WriteTrace] and [Trace.Format] (every event, one a line),
//     [Trace.Excerpt], [Secs], [ErrnoName].
//   - Leadership as the processes reported it: [Trace.Leadership]
//     ([Interval], ordered by step where times tie: [Interval.Overlaps]),
//     [Trace.MaxConcurrentLeaders], [Trace.Leaders],
//     [Trace.FirstLeaderAfter], [Trace.FirstFault],
//     [Trace.LeaderlessAtEnd].
//   - Recorded traces of real processes: [NewRecorded], [Trace.AddProc],
//     [Trace.Act], [Trace.Add], [Trace.Finish].
package trace
