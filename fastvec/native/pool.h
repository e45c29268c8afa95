/* pool.h: the CPU backend's pool of threads (batch.h's fv_reset and fv_step run on it): threads claim
 * chunks of envs, so that no call waits for a thread that another process keeps off its core. Plain C99
 * with pthreads; it knows nothing of envs (a job is a function over a range of env indices). */
#ifndef FASTVEC_POOL_H
#define FASTVEC_POOL_H

#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

/* ---------------------------------------------------------------- the worker pool
 * fv_reset and fv_step split the batch into chunks of envs that threads claim, one atomic flag per
 * chunk: the calling thread and the pool's workers each claim the chunks of their own share of the batch
 * first (so an env tends to stay on one core's caches from step to step), then any chunk still unclaimed,
 * and the call returns once every chunk is done. Nothing waits for a thread that has not claimed a
 * chunk, so a worker that is descheduled (another process busy on its core) costs at most the chunk it
 * holds, never the step: the caller and the other workers step the rest. (An OpenMP team makes every
 * thread check in at a barrier, so one descheduled thread stalled every step for a scheduler time
 * slice; benchmarks/busy_cpu.py.) An idle worker spins for FV_WORKER_SPIN_NS in case the next call
 * comes soon (a loop of steps), then sleeps on a condition variable; the caller waits for chunks that
 * others hold by spinning. Spinning threads yield their core after FV_PAUSE_NS (fv_spin), so that
 * one never keeps a thread with work, the caller or a worker holding a chunk, waiting for its core.
 * Whether the workers help at all is measured, not assumed: each kind of job (its function) keeps the
 * time per env of its recent calls with the workers and of those on the caller alone, takes the faster
 * way, and now and then tries the other for FV_PROBE_RUN calls, so that a change (a competitor starting or
 * ending) is seen: after FV_PROBE_CALLS calls, then twice as many after each try that changed nothing (up to
 * FV_PROBE_MAX), because on a busy machine a try of the pool can stall a call for a scheduler time slice, a
 * hundred times a step's cost. On an idle machine the pool wins; on a busy one, one thread that keeps its
 * core can beat two that wait for each other.
 * Which thread steps an env never changes its results. One call at a time uses the pool: a call from a
 * second thread while it is busy steps its batch alone. A forked child starts a pool of its own. */
#define FV_WORKER_SPIN_NS 50000 /* an idle worker spins this long for the next call, then sleeps */
#define FV_PAR_MIN_ENVS 256     /* below this many envs the caller steps them alone */
#define FV_CHUNKS_PER_THREAD 4
#define FV_PAUSE_NS 2000        /* spin on the CPU this long before spinning with sched_yield */
#define FV_MAX_THREADS 256
#define FV_MAX_CHUNKS 1024
#define FV_PROBE_CALLS 64       /* FV_PROBE_RUN calls try the way that is not the faster now after this many calls, */
#define FV_PROBE_MAX 4096       /* twice as many after each try that left the faster way as it was, up to this */
#define FV_PROBE_RUN 4
#define FV_JOB_KINDS 4          /* job functions whose timings are kept */

typedef int (*fv_chunk_fn)(const void* job, int lo, int hi);

static struct {
    pthread_mutex_t busy, lock; /* busy: held by the call using the pool; lock: for the sleepers */
    pthread_cond_t wake;
    int threads;               /* threads per call, the caller included (fv_set_num_threads) */
    int started, forked, sleepers; /* workers running, pthread_atfork registered, workers asleep */
    fv_chunk_fn fn;            /* the current job, written before its number is published */
    const void* job;
    int n, chunk, num_chunks, team;
    /* per job kind: fn, calls so far, and the mean ns per env on the caller alone [0] and with the pool [1]
     * (exponential moving averages, 0 until measured) */
    struct {
        fv_chunk_fn fn;
        unsigned calls, next_probe, probe_every; /* the call that starts the next try, and the calls between tries */
        int trial_left, last_way, probe_from;    /* probe_from: the faster way when the last try began, or -1 */
        double ns_per_env[2];
    } kinds[FV_JOB_KINDS];
    /* each on a cache line of its own: */
    __attribute__((aligned(64))) unsigned long long gen;  /* the current job's number */
    __attribute__((aligned(64))) unsigned long long done; /* its chunks done << 32 | sum of their results */
    __attribute__((aligned(64))) unsigned long long claimed[FV_MAX_CHUNKS]; /* chunk k: the job that claimed it */
} fv_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1};

#if defined(__x86_64__) || defined(__i386__)
#define fv_pause() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define fv_pause() __asm__ __volatile__("yield")
#else
#define fv_pause() ((void)0)
#endif

static inline long long fv_now_ns(void) {
    struct timespec t;
    return clock_gettime(CLOCK_MONOTONIC, &t), (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spins a moment on the CPU, then hands the core to any other runnable thread (sched_yield): a thread
 * waiting here never keeps a thread with work off a shared core. Returns the nanoseconds since start
 * (measured every 16th call, else 0). */
static long long fv_spin(long long start, int i) {
    long long elapsed = i % 16 == 0 ? fv_now_ns() - start : 0;
    if (elapsed > FV_PAUSE_NS)
        sched_yield();
    else
        fv_pause();
    return elapsed;
}

/* Thread `id` claims and runs chunks of job `gen`: its own share first, then whatever is unclaimed.
 * A claim is a compare-and-swap of the chunk's flag from an older job's number to gen (flags only
 * grow), kept only if gen is still the current job afterwards: a worker that slept through a whole job
 * leaves its stale claim behind as a flag that the current job still takes for unclaimed, and never
 * touches a flag of a newer job. A kept claim means job gen is not finished, so its caller has not
 * written the next job over the fields read before it. */
static void fv_pool_work(unsigned long long gen, int id) {
#define FV_GET(field) __atomic_load_n(&fv_pool.field, __ATOMIC_RELAXED)
    fv_chunk_fn fn = FV_GET(fn);
    const void* job = FV_GET(job);
    int n = FV_GET(n), chunk = FV_GET(chunk), num_chunks = FV_GET(num_chunks), team = FV_GET(team);
    if (id >= team || num_chunks > FV_MAX_CHUNKS) return;
    int home = (int)((long long)id * num_chunks / team);
    for (int j = 0; j < num_chunks; j++) {
        int k = home + j < num_chunks ? home + j : home + j - num_chunks;
        unsigned long long flag = __atomic_load_n(&fv_pool.claimed[k], __ATOMIC_RELAXED);
        if (flag >= gen ||
            !__atomic_compare_exchange_n(&fv_pool.claimed[k], &flag, gen, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            continue; /* claimed in this job (or, seen by a stale worker, in a newer one) */
        if (__atomic_load_n(&fv_pool.gen, __ATOMIC_SEQ_CST) != gen) return; /* a stale worker */
        int lo = k * chunk, hi = lo + chunk < n ? lo + chunk : n;
        __atomic_fetch_add(&fv_pool.done, (1ULL << 32) + (unsigned)fn(job, lo, hi), __ATOMIC_RELEASE);
    }
}

/* The number of the next job after `seen`: spin a while, then sleep until one is published. */
static unsigned long long fv_pool_wait(unsigned long long seen) {
    long long start = fv_now_ns();
    for (int i = 1;; i++) {
        unsigned long long gen = __atomic_load_n(&fv_pool.gen, __ATOMIC_ACQUIRE);
        if (gen != seen) return gen;
        if (fv_spin(start, i) > FV_WORKER_SPIN_NS) break;
    }
    unsigned long long gen;
    pthread_mutex_lock(&fv_pool.lock);
    __atomic_fetch_add(&fv_pool.sleepers, 1, __ATOMIC_SEQ_CST); /* then read gen: see fv_pool_run */
    while ((gen = __atomic_load_n(&fv_pool.gen, __ATOMIC_SEQ_CST)) == seen)
        pthread_cond_wait(&fv_pool.wake, &fv_pool.lock);
    __atomic_fetch_sub(&fv_pool.sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&fv_pool.lock);
    return gen;
}

static void* fv_worker(void* arg) {
    int id = (int)(long)arg; /* 1, 2, ...: the caller is thread 0 */
    unsigned long long seen = __atomic_load_n(&fv_pool.gen, __ATOMIC_ACQUIRE);
    for (;;) {
        seen = fv_pool_wait(seen);
        fv_pool_work(seen, id);
    }
    return NULL;
}

/* In a forked child only the forking thread exists: the pool starts afresh there. */
static void fv_pool_after_fork(void) {
    pthread_mutex_t unlocked = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh = PTHREAD_COND_INITIALIZER;
    fv_pool.busy = fv_pool.lock = unlocked;
    fv_pool.wake = fresh;
    fv_pool.started = fv_pool.sleepers = 0;
}

/* Starts workers up to `workers` (called under fv_pool.busy); they block every signal, which are
 * then delivered to the process's own threads, as before the pool. */
static void fv_pool_start(int workers) {
    if (!fv_pool.forked) fv_pool.forked = 1, pthread_atfork(NULL, NULL, fv_pool_after_fork);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* on a failure: fewer workers (the caller steps whatever they do not) */
    while (fv_pool.started < workers && pthread_create(&t, &attr, fv_worker, (void*)(long)(fv_pool.started + 1)) == 0)
        fv_pool.started += 1;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int fv_pool_run_team(fv_chunk_fn fn, const void* job, int n, int threads, int per_thread);

/* Which way a call of fn takes (0: the caller alone, 1: the pool), from its kind's timings (under busy); *timed:
 * whether to record this call's time. The first call after a change of way is not recorded: it pays for the
 * change (a worker still spinning from the pool's last call takes CPU from the caller alone; a sleeping one
 * must be woken), which a run of calls in one way does not. */
static int fv_pool_choose(fv_chunk_fn fn, int* kind, int* timed) {
    int k = 0;
    while (k < FV_JOB_KINDS - 1 && fv_pool.kinds[k].fn != fn && fv_pool.kinds[k].fn != NULL) k++;
    if (fv_pool.kinds[k].fn != fn) { /* a new kind (the last slot is reused when all are taken) */
        fv_pool.kinds[k].fn = fn, fv_pool.kinds[k].calls = 0, fv_pool.kinds[k].trial_left = 0;
        fv_pool.kinds[k].last_way = fv_pool.kinds[k].probe_from = -1;
        fv_pool.kinds[k].next_probe = fv_pool.kinds[k].probe_every = FV_PROBE_CALLS;
        fv_pool.kinds[k].ns_per_env[0] = fv_pool.kinds[k].ns_per_env[1] = 0.0;
    }
    *kind = k;
    const double* t = fv_pool.kinds[k].ns_per_env;
    unsigned calls = fv_pool.kinds[k].calls++;
    int way;
    if (t[1] == 0.0) {
        way = 1; /* the pool first (its first call starts the workers) */
    } else if (t[0] == 0.0) {
        way = 0;
    } else if (fv_pool.kinds[k].trial_left > 0) {
        fv_pool.kinds[k].trial_left -= 1;
        way = fv_pool.kinds[k].last_way;
    } else {
        way = t[1] <= t[0];
        if (fv_pool.kinds[k].probe_from >= 0) { /* the first choice after a try: did the try change it? */
            unsigned every = fv_pool.kinds[k].probe_every;
            fv_pool.kinds[k].probe_every = way != fv_pool.kinds[k].probe_from ? FV_PROBE_CALLS
                                           : every < FV_PROBE_MAX / 2 ? 2 * every : FV_PROBE_MAX;
            fv_pool.kinds[k].probe_from = -1;
        }
        if ((int)(calls - fv_pool.kinds[k].next_probe) >= 0) { /* (wrap-safe: calls counts on past 2^32) */
            fv_pool.kinds[k].probe_from = way;
            fv_pool.kinds[k].next_probe = calls + fv_pool.kinds[k].probe_every;
            way = !way, fv_pool.kinds[k].trial_left = FV_PROBE_RUN - 1;
        }
    }
    *timed = way == fv_pool.kinds[k].last_way;
    fv_pool.kinds[k].last_way = way;
    return way;
}

/* Runs fn over envs [0, n) in about per_thread chunks a thread, claimed by the caller and the pool's workers (or
 * on the caller alone, as fv_pool_choose decides); returns the sum of fn's results. Chunks are whole 64-env blocks
 * so that no two threads write one cache line of a byte-per-env output (terminated, truncated). A call waits for
 * its last chunk, so chunks of costly envs (a MuJoCo step, tens of microseconds and varying with contacts) are
 * best one env each: fewer chunks cost fewer claims, more chunks leave a shorter tail after the others finish. */
static int fv_pool_run_chunks(fv_chunk_fn fn, const void* job, int n, int per_thread) {
    int threads = __atomic_load_n(&fv_pool.threads, __ATOMIC_RELAXED);
    if (threads <= 1 || n < FV_PAR_MIN_ENVS) return fn(job, 0, n);
    if (pthread_mutex_trylock(&fv_pool.busy) != 0) return fn(job, 0, n); /* another thread's call has it */
    int kind, timed, pooled = fv_pool_choose(fn, &kind, &timed);
    long long start = fv_now_ns();
    int result = pooled ? fv_pool_run_team(fn, job, n, threads, per_thread) : fn(job, 0, n);
    double ns = (double)(fv_now_ns() - start) / n, *mean = &fv_pool.kinds[kind].ns_per_env[pooled];
    if (timed) *mean = *mean == 0.0 ? ns : (15.0 * *mean + ns) / 16.0;
    pthread_mutex_unlock(&fv_pool.busy);
    return result;
}

/* fv_pool_run_chunks with FV_CHUNKS_PER_THREAD: cheap envs, whose chunks are many envs each. */
static int fv_pool_run(fv_chunk_fn fn, const void* job, int n) {
    return fv_pool_run_chunks(fn, job, n, FV_CHUNKS_PER_THREAD);
}

/* fv_pool_run_chunks's call with the workers (under fv_pool.busy). */
static int fv_pool_run_team(fv_chunk_fn fn, const void* job, int n, int threads, int per_thread) {
    if (fv_pool.started < threads - 1) fv_pool_start(threads - 1);
    int team = fv_pool.started + 1 < threads ? fv_pool.started + 1 : threads;
    if (team <= 1) return fn(job, 0, n);
    int target = per_thread < FV_MAX_CHUNKS / team ? team * per_thread : FV_MAX_CHUNKS;
    int chunk = ((n + target - 1) / target + 63) / 64 * 64;
    int num_chunks = (n + chunk - 1) / chunk;
#define FV_SET(field, value) __atomic_store_n(&fv_pool.field, value, __ATOMIC_RELAXED)
    FV_SET(fn, fn), FV_SET(job, job), FV_SET(n, n), FV_SET(chunk, chunk), FV_SET(num_chunks, num_chunks);
    FV_SET(team, team), FV_SET(done, 0);
    unsigned long long gen = __atomic_load_n(&fv_pool.gen, __ATOMIC_RELAXED) + 1;
    /* Publish, then wake sleepers: a worker counts itself a sleeper before it reads gen, so either it
     * sees this job or this call sees it asleep and wakes it (sequentially consistent). */
    __atomic_store_n(&fv_pool.gen, gen, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&fv_pool.sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&fv_pool.lock);
        pthread_cond_broadcast(&fv_pool.wake);
        pthread_mutex_unlock(&fv_pool.lock);
    }
    fv_pool_work(gen, 0);
    unsigned long long done;
    long long start = 0;
    for (int i = 1; ((done = __atomic_load_n(&fv_pool.done, __ATOMIC_ACQUIRE)) >> 32) < (unsigned)num_chunks; i++) {
        if (start == 0) start = fv_now_ns();
        fv_spin(start, i); /* a worker holding a chunk may be waiting for this core */
    }
    return (int)(unsigned)done;
}

#endif /* FASTVEC_POOL_H */
