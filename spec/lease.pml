/*
 * lease.pml: an independent model of the lease protocols, for spin.
 *
 * The seed protocol (the post's program, -DSEED) and the reference
 * protocol (the default) over an abstract lock file, with crashes and
 * pauses at any step and lease expiry with abstract time. Safety is an
 * assertion (never two live leaders); liveness is the LTL claim `live`
 * (always eventually a leader, while some process is alive and running).
 *
 *   spin -a [-DSEED] lease.pml && gcc -O2 -DNOCLAIM -o pan pan.c && ./pan        (safety)
 *   spin -a [-DSEED] lease.pml && gcc -O2 -o pan pan.c && ./pan -a -f -N live    (liveness)
 *
 * -DSWEEP models the reference's removal of old versions (safety only):
 * absolute version numbers up to MAXV, each name existing or not, a
 * writer's listing after its link (verify), and the sweep. -DNOVERIFY
 * leaves out the listing after the link (a writer paused before its link
 * re-creates a removed version and believes it won); -DEARLYREMOVE
 * removes the versions a writer replaces before it links their successor
 * (a reader in between finds no version and acquires). spin finds both:
 *
 *   spin -a -DSWEEP [-DNOVERIFY | -DEARLYREMOVE] lease.pml && gcc -O2 -DNOCLAIM -o pan pan.c && ./pan -E
 *
 * The correspondence with the Go code, step by step, and what the
 * abstraction leaves out are in the README ("The formal model").
 */

#define N        3   /* processes */
#define MAXCRASH 1   /* SIGKILLs per run */
#define MAXPAUSE 1   /* SIGSTOP/SIGCONT pairs per run */

/* The lock file. Seed: 0 absent, 1 exists but empty, 2 holds a lease.
 * Reference: the holder of the highest version (0: none or released); a
 * version is published whole by link(2), so it is never empty. Version
 * numbers are abstracted to what a compare-and-set needs: fresh[i] says
 * process i has read (or written) the highest version, and every new
 * version makes everyone else's knowledge stale. (A counter would wrap in
 * a finite model and let a stale compare succeed.) */
byte lockState;
byte holder;
bool fresh[N+1];

bool leader[N+1];   /* what each process believes */
bool dead[N+1];
bool paused[N+1];
bool expired;       /* the current lease may be taken over */
byte crashes;
byte pauses;

/* A crash or a pause may come at any step. */
inline fault() {
	if
	:: crashes < MAXCRASH -> crashes++; dead[me] = true; leader[me] = false; goto stop
	:: pauses < MAXPAUSE -> pauses++; paused[me] = true; (!paused[me])
	:: true -> skip
	fi
}

inline safety() {
	assert(!(leader[1] && leader[2]) && !(leader[1] && leader[3]) && !(leader[2] && leader[3]))
}

/* Abstract time. With clocks right, a lease expires only when its holder
 * has stopped renewing for a whole lease: it is dead or paused. In the
 * reference the holder's local deadline passes strictly before any
 * watcher may take over, so a paused holder stops leading first; the seed
 * has no deadline. The environment also resumes paused processes. */
active proctype Time() {
	byte i;
end:	/* nothing left to expire or resume is a valid end */
	do
	:: atomic {
#ifdef SEED
		lockState == 2 && (dead[holder] || paused[holder]) && !expired -> expired = true
#else
		holder != 0 && (dead[holder] || paused[holder]) && !expired -> leader[holder] = false; expired = true
#endif
	   }
	:: atomic { (paused[1] || paused[2] || paused[3]) ->
		i = 1; do :: paused[i] -> paused[i] = false; break :: else -> i++ od }
	od
}

#ifdef SWEEP
#define MAXV 4       /* versions 1..MAXV: writes stop there (a bound on the run) */
bool ex[MAXV+2];     /* ex[v]: the name LOCK.v exists */
byte hold[MAXV+2];   /* the holder written in version v (0: a release) */
byte top;            /* the highest version ever linked, which is never removed */

/* The listing: the highest existing version (0: none). */
inline list(m) {
	m = MAXV+1; do :: m > 0 && !ex[m] -> m-- :: else -> break od
}
#endif

#ifdef SEED
proctype P(byte me) {
	/* tryAcquireLease at start: O_EXCL create, close, os.WriteFile. */
	fault();
	if
	:: atomic { lockState == 0 -> lockState = 1 }      /* open(O_CREAT|O_EXCL) */
	   fault();                                        /* the empty-file window */
	   atomic { lockState = 2; holder = me; expired = false; leader[me] = true }
	   safety();
	   goto leading
	:: else -> skip
	fi;
watching:
	do
	:: fault();
	   if
	   :: lockState != 2 ->                            /* unreadable: try to acquire */
	      if
	      :: atomic { lockState == 0 -> lockState = 1 }
	         fault();
	         atomic { lockState = 2; holder = me; expired = false; leader[me] = true }
	         safety();
	         goto leading
	      :: else -> skip                              /* "Could not read lease file" */
	      fi
	   :: lockState == 2 && expired ->                 /* read: expired, take over */
	      fault();
	      lockState = 0;                               /* os.Remove, by name */
	      fault();
	      if
	      :: atomic { lockState == 0 -> lockState = 1 }
	         fault();
	         atomic { lockState = 2; holder = me; expired = false; leader[me] = true }
	         safety();
	         goto leading
	      :: else -> skip                              /* lost the race */
	      fi
	   :: lockState == 2 && !expired -> skip           /* held */
	   fi
	od;
leading:
	do
	:: fault();
	   if
	   :: lockState == 2 && holder == me ->            /* read: ours, renew */
	      fault();
	      lockState = 1;                               /* open(O_TRUNC) */
	      fault();
	      atomic { lockState = 2; holder = me; expired = false }
	   :: lockState == 2 && holder != me ->            /* taken: step down */
	      leader[me] = false;
	      goto watching
	   :: lockState != 2 -> skip                       /* unreadable, retry */
	   fi
	od;
stop:
	skip
}
#elif defined(SWEEP)
/* A write of version rv+1 (holder nh) by process me, which read rv:
 * link(2) succeeds only if the name is free; then the listing after it
 * decides whether the write stands (ok) or was superseded; then the sweep
 * removes every version below the new one less one. */
inline write(rv, nh, ok) {
#ifdef EARLYREMOVE
	/* the wrong removal: the old versions go before their successor exists */
	d_step { k = 1; do :: k <= rv -> ex[k] = false; k++ :: else -> break od; k = 0 }
	fault();
#endif
	ok = false;
	if
	:: atomic { rv + 1 <= MAXV && !ex[rv+1] ->
		ex[rv+1] = true; hold[rv+1] = nh;
		if :: rv + 1 > top -> top = rv + 1; expired = false; holder = nh :: else -> skip fi;
		ok = true }
	:: atomic { rv + 1 <= MAXV && ex[rv+1] -> skip }     /* EEXIST */
	fi;
	if
	:: ok ->
		fault();
		/* superseded unless still the highest; and the writer's local
		 * deadline has passed if its lease expired while it wrote */
#ifndef NOVERIFY
		d_step { list(m); ok = (m == rv + 1) && !(expired && holder == me); m = 0 }
#else
		atomic { ok = !(expired && holder == me) }
#endif
		if
		:: ok -> d_step { k = 1; do :: k + 1 < rv + 1 -> ex[k] = false; k++ :: else -> break od; k = 0 }
		:: else -> skip
		fi
	:: else -> skip
	fi
}

proctype P(byte me) {
	byte rv, m, k;
	bool ok;
watching:
end_w:
	do
	:: fault();
	   d_step { list(rv); ok = (rv == 0 || hold[rv] == 0 || (expired && rv == top)) }   /* read the highest version: free, or unchanged for a lease? */
	   if
	   :: ok ->
	      fault();
	      write(rv, me, ok);
	      if
	      :: ok -> rv++; atomic { leader[me] = true }; safety(); goto leading
	      :: else -> skip
	      fi
	   :: else -> skip
	   fi
	od;
leading:
end_l:
	do
	:: fault();
	   if
	   :: !leader[me] -> goto watching                 /* the local deadline passed */
	   :: leader[me] ->                                /* renew the version it holds */
	      write(rv, me, ok);
	      if
	      :: ok && leader[me] -> rv++; safety()
	      :: else -> atomic { leader[me] = false }; goto watching
	      fi
	   fi
	od;
stop:
	skip
}
#else
inline publish() {
	/* a new version: everyone else's read of the latest is now stale */
	fresh[1] = false; fresh[2] = false; fresh[3] = false; fresh[me] = true
}

proctype P(byte me) {
	byte h;
watching:
	do
	:: fault();
	   atomic { fresh[me] = true; h = holder }         /* read the highest version */
	   if
	   :: h == 0 || (expired && fresh[me]) ->          /* free, or unchanged for a lease */
	      fault();
	      if
	      :: atomic { fresh[me] -> publish(); holder = me; expired = false; leader[me] = true }
	         safety();                                 /* link(temp, LOCK.N+1) won */
	         goto leading
	      :: else -> skip                              /* EEXIST: someone else won */
	      fi
	   :: else -> skip
	   fi
	od;
leading:
	do
	:: fault();
	   if
	   :: !leader[me] -> goto watching                 /* the local deadline passed */
	   :: atomic { leader[me] && fresh[me] -> publish(); expired = false }             /* renew */
	   :: atomic { leader[me] && !fresh[me] -> leader[me] = false }; goto watching   /* lost */
	   fi
	od;
stop:
	skip
}
#endif

init {
	atomic { run P(1); run P(2); run P(3) }
}

ltl live { [] <> (leader[1] || leader[2] || leader[3] ||
	((dead[1] || paused[1]) && (dead[2] || paused[2]) && (dead[3] || paused[3]))) }
