// The JDK side of the schedpool benchmark harness (the "Performance" issue and
// issues 23, 33): the workloads W1–W9, W7X8, W4L and W9L of benches/workloads.rs, run on
//   --impl jdk17-stpe   java.util.concurrent.ScheduledThreadPoolExecutor, 2 core
//                       threads, setRemoveOnCancelPolicy(true) (run on JDK 17)
//   --impl jdk25-stpe   the same class, run on JDK 25
//   --impl jdk25-fjp    JDK 25's ForkJoinPool(2) used as a ScheduledExecutorService
//                       (its DelayScheduler, JDK-8319447; run on JDK 25)
// Same seeded delays and cancel order as the Rust side (SplitMix64, same
// seeds), same table, same CSV columns:
//   impl,workload,metric,unit,value
//
// Compiled once with JDK 17 (javac --release 17); ForkJoinPool is reached
// through the ScheduledExecutorService interface (a cast via Object), which
// only JDK 25's ForkJoinPool implements.
//
//   javac --release 17 -d target/jdk-bench benches/jdk/StpeBench.java
//   java -Xms3g -Xmx3g -cp target/jdk-bench StpeBench [--impl NAME] [--run N] [--csv PATH]
//        [--out-dir DIR] [--only W1,W4] [--burner PATH]
// --burner PATH: the workloads binary, started twice as `PATH --burn` around
// W4L and W9L (two busy loops holding both cores); without it they are skipped.
//
// Every timed workload also reports "cpu all threads": the process's CPU time
// (OperatingSystemMXBean.getProcessCpuTime: every thread, JIT and GC included)
// over the measured section, per operation.
//
// SCHEDPOOL_BENCH_QUICK=1 scales the counts down exactly as the Rust side does.
// Heap (W2 retained, W6 per task) is MemoryMXBean heap-used after System.gc(),
// relative to a baseline taken the same way; the JIT is warmed up first on a
// smaller run of the hot paths.

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

public final class StpeBench {
    /** The column name: jdk17-stpe, jdk25-stpe or jdk25-fjp (set by --impl). */
    static String IMPL = "jdk17-stpe";
    /** True for the ForkJoinPool column. */
    static boolean FJP = false;

    // ---- parameters (keep in sync with benches/common/mod.rs) ----
    static final class Params {
        boolean quick;
        int nPending, nZero, nLateness, nFixedRate, nPerProducer, w8MinCancels;
        long w4WindowNs, w5PeriodNs, w5DurationNs, w7WindowNs;
        int[] w8Sizes;
        long w9Rate, w9DurationNs;

        static Params fromEnv() {
            String q = System.getenv("SCHEDPOOL_BENCH_QUICK");
            Params p = new Params();
            p.quick = q != null && !q.isEmpty() && !q.equals("0");
            if (p.quick) {
                p.nPending = 20_000; p.nZero = 20_000; p.nLateness = 1_000;
                p.w4WindowNs = 200_000_000L; p.nFixedRate = 100; p.w5PeriodNs = 1_000_000L;
                p.w5DurationNs = 300_000_000L; p.nPerProducer = 10_000; p.w7WindowNs = 10_000_000L;
                p.w8Sizes = new int[] {1_000, 10_000}; p.w8MinCancels = 1_000;
                p.w9Rate = 250_000; p.w9DurationNs = 300_000_000L;
            } else {
                p.nPending = 1_000_000; p.nZero = 1_000_000; p.nLateness = 10_000;
                p.w4WindowNs = 1_000_000_000L; p.nFixedRate = 1_000; p.w5PeriodNs = 1_000_000L;
                p.w5DurationNs = 2_000_000_000L; p.nPerProducer = 500_000; p.w7WindowNs = 10_000_000L;
                p.w8Sizes = new int[] {1_000, 10_000, 100_000, 1_000_000}; p.w8MinCancels = 10_000;
                p.w9Rate = 250_000; p.w9DurationNs = 2_000_000_000L;
            }
            long rate = envLong("SCHEDPOOL_BENCH_W9_RATE"), ms = envLong("SCHEDPOOL_BENCH_W9_MS");
            if (rate > 0) p.w9Rate = rate;
            if (ms > 0) p.w9DurationNs = ms * 1_000_000L;
            return p;
        }

        static long envLong(String k) {
            try {
                String v = System.getenv(k);
                return v == null ? 0 : Long.parseLong(v.trim());
            } catch (NumberFormatException e) {
                return 0;
            }
        }
    }

    static final long LONG_MIN = 3_600_000_000_000L; // 1 h in ns
    static final long LONG_SPAN = 3_600_000_000_000L;
    static final long SEED_DELAYS = 0x5EED0001L, SEED_PERM = 0x5EED0002L, SEED_LATENESS = 0x5EED0004L,
            SEED_PRODUCER = 0x5EED0007L, SEED_W8 = 0x5EED0008L, SEED_W9 = 0x5EED0009L;

    // ---- SplitMix64, identical to common::Rng ----
    static final class Rng {
        long s;
        Rng(long seed) { s = seed; }
        long next() {
            s += 0x9E3779B97F4A7C15L;
            long z = s;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }
        /** uniform in [0, n), n > 0: high 64 bits of the unsigned 128-bit product. */
        long below(long n) {
            long x = next();
            return Math.multiplyHigh(x, n) + ((x >> 63) & n);
        }
    }

    static long[] delays(long seed, int n, long min, long span) {
        Rng r = new Rng(seed);
        long[] d = new long[n];
        for (int i = 0; i < n; i++) d[i] = min + r.below(span);
        return d;
    }

    static int[] permutation(long seed, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) v[i] = i;
        Rng r = new Rng(seed);
        for (int i = n - 1; i >= 1; i--) {
            int j = (int) r.below(i + 1L);
            int t = v[i]; v[i] = v[j]; v[j] = t;
        }
        return v;
    }

    // ---- pool ----
    static ScheduledExecutorService pool() {
        if (FJP) {
            // JDK 25: ForkJoinPool implements ScheduledExecutorService (compiled
            // against 17, hence the cast via Object).
            ScheduledExecutorService ex = (ScheduledExecutorService) (Object) new ForkJoinPool(2);
            // Start its two workers and its DelayScheduler thread before any
            // measurement (the Rust pools and STPE start their threads eagerly).
            CountDownLatch l = new CountDownLatch(3);
            CyclicBarrier both = new CyclicBarrier(2);
            for (int i = 0; i < 2; i++) ex.execute(() -> {
                try { both.await(5, TimeUnit.SECONDS); } catch (Exception e) { /* started anyway */ }
                l.countDown();
            });
            ex.schedule(l::countDown, 1, TimeUnit.MILLISECONDS);
            try { l.await(10, TimeUnit.SECONDS); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            return ex;
        }
        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(2);
        ex.setRemoveOnCancelPolicy(true);
        ex.prestartAllCoreThreads(); // the Rust pools start their threads eagerly too
        return ex;
    }

    /** Tasks queued, if the pool tells: STPE's queue, FJP's getDelayedTaskCount (JDK 25). */
    static long queueLen(ScheduledExecutorService ex) {
        if (ex instanceof ScheduledThreadPoolExecutor) return ((ScheduledThreadPoolExecutor) ex).getQueue().size();
        try {
            return ((Number) ex.getClass().getMethod("getDelayedTaskCount").invoke(ex)).longValue();
        } catch (ReflectiveOperationException e) {
            return -1;
        }
    }

    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** CPU time of the producer threads (W7, W9) that ended: each adds its own at its end. */
    static final AtomicLong PRODUCERS_CPU = new AtomicLong();
    static final String PRODUCER = "sp-producer";

    /**
     * CPU time of every thread of this process, ns: the sum of the first field of
     * /proc/self/task/{@literal *}/schedstat (ns on the CPU; OperatingSystemMXBean's
     * getProcessCpuTime counts in 10 ms ticks on Linux, too coarse here), threads
     * named sp-producer* excluded and their own totals (PRODUCERS_CPU) added
     * instead, so that a producer that ended inside the section counts, once.
     * The calling thread counts by its CPU clock (schedstat lags by up to a
     * scheduler tick for a thread that is on a CPU; so does it for a worker
     * running at the moment of reading, an error of a tick or two per section).
     * Other threads that end inside a section (rare: a JIT compiler thread) are
     * lost. Falls back to getProcessCpuTime without /proc.
     */
    static long processCpuNs() {
        long sum = PRODUCERS_CPU.get() + threadCpuNs();
        String self;
        try {
            self = Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName().toString();
        } catch (IOException | RuntimeException e) {
            self = "";
        }
        try (java.nio.file.DirectoryStream<Path> ds = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
            for (Path t : ds) {
                try {
                    if (t.getFileName().toString().equals(self)) continue;
                    if (new String(Files.readAllBytes(t.resolve("comm"))).startsWith(PRODUCER)) continue;
                    String st = new String(Files.readAllBytes(t.resolve("schedstat")));
                    sum += Long.parseLong(st.substring(0, st.indexOf(' ')));
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException e) {
            return OS.getProcessCpuTime();
        }
        return sum;
    }

    /** This thread's CPU time, ns. */
    static long threadCpuNs() { return THREADS.getCurrentThreadCpuTime(); }

    /** This thread's context switches so far, {voluntary, involuntary}, from
     *  /proc/thread-self/status (Linux); {-1, -1} where it cannot be read. Read only at a
     *  producer's start and end: a read costs microseconds, more than a burst's work. */
    static long[] threadSwitches() {
        long[] out = {-1, -1};
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/thread-self/status"))) {
                if (line.startsWith("voluntary_ctxt_switches:")) out[0] = Long.parseLong(line.substring(24).trim());
                else if (line.startsWith("nonvoluntary_ctxt_switches:")) out[1] = Long.parseLong(line.substring(27).trim());
            }
        } catch (IOException | RuntimeException e) {
            return new long[] {-1, -1};
        }
        return out;
    }

    static void teardown(ScheduledExecutorService ex) {
        ex.shutdownNow();
        try {
            ex.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static final Runnable NOOP = () -> { };

    static final class Latch {
        final AtomicInteger count = new AtomicInteger();
        final int target;
        final Thread waiter = Thread.currentThread();
        Latch(int target) { this.target = target; }
        void hit() { if (count.incrementAndGet() == target) LockSupport.unpark(waiter); }
        boolean await(long timeoutNs) {
            long start = System.nanoTime();
            while (count.get() < target) {
                long el = System.nanoTime() - start;
                if (el >= timeoutNs) return false;
                LockSupport.parkNanos(Math.min(timeoutNs - el, 20_000_000L));
            }
            return true;
        }
    }

    // ---- results ----
    static final class Row {
        final String workload, metric, unit; final double value;
        Row(String w, String m, String u, double v) { workload = w; metric = m; unit = u; value = v; }
    }

    final Params p;
    final List<Row> rows = new ArrayList<>();
    final int run;
    final Path outDir;

    StpeBench(Params p, int run, Path outDir) { this.p = p; this.run = run; this.outDir = outDir; }

    void add(String w, String m, String u, double v) { rows.add(new Row(w, m, u, v)); }

    static final MemoryMXBean MEM = ManagementFactory.getMemoryMXBean();

    static long heapAfterGc() {
        long last = Long.MAX_VALUE;
        for (int i = 0; i < 6; i++) {
            System.gc();
            try { Thread.sleep(30); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            long u = MEM.getHeapMemoryUsage().getUsed();
            if (u == last) break;
            last = u;
        }
        return MEM.getHeapMemoryUsage().getUsed();
    }

    // ---- workloads ----
    void warmup() {
        for (int round = 0; round < 3; round++) {
            ScheduledExecutorService ex = pool();
            long[] d = delays(1, 50_000, LONG_MIN, LONG_SPAN);
            ScheduledFuture<?>[] hs = new ScheduledFuture<?>[d.length];
            for (int i = 0; i < d.length; i++) hs[i] = ex.schedule(NOOP, d[i], TimeUnit.NANOSECONDS);
            for (int i = d.length - 1; i >= 0; i--) hs[i].cancel(false);
            Latch l = new Latch(50_000);
            Runnable r = l::hit;
            for (int i = 0; i < 50_000; i++) ex.execute(r);
            l.await(30_000_000_000L);
            teardown(ex);
        }
    }

    void w1w2() {
        int n = p.nPending;
        long[] ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
        int[] perm = permutation(SEED_PERM, n);
        ScheduledExecutorService ex = pool();
        ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
        long c0 = processCpuNs();
        long t = System.nanoTime();
        for (int i = 0; i < n; i++) hs[i] = ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
        long sched = System.nanoTime() - t;
        long schedCpu = processCpuNs() - c0;
        c0 = processCpuNs();
        t = System.nanoTime();
        for (int i = 0; i < n; i++) hs[perm[i]].cancel(false);
        long cancel = System.nanoTime() - t;
        long cancelCpu = processCpuNs() - c0;
        teardown(ex);
        add("W1", "schedule", "ns/op", (double) sched / n);
        add("W1", "cpu all threads", "ns/op", (double) schedCpu / n);
        add("W2", "cancel", "ns/op", (double) cancel / n);
        add("W2", "cpu all threads", "ns/op", (double) cancelCpu / n);
    }

    void memory() {
        int n = p.nPending;
        long[] ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
        int[] perm = permutation(SEED_PERM, n);

        // Pass A: keep the futures, cancel all, drop them.
        ScheduledExecutorService ex = pool();
        ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
        long b0 = heapAfterGc();
        for (int i = 0; i < n; i++) hs[i] = ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
        long withHandles = heapAfterGc() - b0;
        for (int i = 0; i < n; i++) hs[perm[i]].cancel(false);
        Arrays.fill(hs, null);
        long retained = heapAfterGc() - b0;
        teardown(ex);
        hs = null;

        // Pass B: futures dropped at once.
        ex = pool();
        b0 = heapAfterGc();
        for (int i = 0; i < n; i++) ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
        long pending = heapAfterGc() - b0;
        teardown(ex);

        add("W2", "retained", "bytes", (double) retained);
        add("W6", "heap/task", "bytes", (double) pending / n);
        add("W6", "heap/task+handle", "bytes", (double) withHandles / n);
    }

    /**
     * W3 submits through {@code execute}; W3S through the scheduler,
     * {@code schedule(r, 0, NANOSECONDS)} with the future dropped. On STPE the two
     * are the same path; on FJP, {@code execute} goes to the work-stealing queues
     * and {@code schedule} to its DelayScheduler.
     */
    void w3(String label) {
        int n = p.nZero;
        ScheduledExecutorService ex = pool();
        Latch l = new Latch(n);
        Runnable r = l::hit;
        long c0 = processCpuNs();
        long t = System.nanoTime();
        if (label.equals("W3S")) {
            for (int i = 0; i < n; i++) ex.schedule(r, 0L, TimeUnit.NANOSECONDS);
        } else {
            for (int i = 0; i < n; i++) ex.execute(r);
        }
        long submitted = System.nanoTime() - t;
        boolean ok = l.await(120_000_000_000L);
        long el = System.nanoTime() - t;
        long cpu = processCpuNs() - c0;
        teardown(ex);
        add(label, "throughput", "tasks/s", ok ? n / (el / 1e9) : Double.NaN);
        add(label, "submit", "ns/op", (double) submitted / n);
        add(label, "cpu all threads", "ns/task", (double) cpu / n);
    }

    void w4(String label) throws IOException {
        int n = p.nLateness;
        long[] ds = delays(SEED_LATENESS, n, 0, p.w4WindowNs);
        AtomicLongArray late = new AtomicLongArray(n);
        for (int i = 0; i < n; i++) late.set(i, Long.MIN_VALUE);
        Latch l = new Latch(n);
        ScheduledExecutorService ex = pool();
        long c0 = processCpuNs();
        for (int i = 0; i < n; i++) {
            final int idx = i;
            final long deadline = System.nanoTime() + ds[i];
            ex.schedule(() -> {
                late.set(idx, System.nanoTime() - deadline);
                l.hit();
            }, ds[i], TimeUnit.NANOSECONDS);
        }
        boolean ok = l.await(p.w4WindowNs + 30_000_000_000L);
        long cpu = processCpuNs() - c0;
        teardown(ex);
        if (!ok) System.err.println(label + " timed out");
        long[] v = new long[n];
        int m = 0;
        for (int i = 0; i < n; i++) if (late.get(i) != Long.MIN_VALUE) v[m++] = late.get(i);
        v = Arrays.copyOf(v, m);
        Arrays.sort(v);
        Path raw = outDir.resolve("raw");
        Files.createDirectories(raw);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(raw.resolve(label.toLowerCase(Locale.ROOT) + "-lateness-" + IMPL + "-r" + run + ".csv")))) {
            w.println("lateness_ns");
            for (long x : v) w.println(x);
        }
        if (m > 0 && v[0] < 0) System.err.println(label + ": task(s) started BEFORE their deadline");
        add(label, "p50", "us", pct(v, 50) / 1000.0);
        add(label, "p99", "us", pct(v, 99) / 1000.0);
        add(label, "p99.9", "us", pct(v, 99.9) / 1000.0);
        add(label, "max", "us", (m == 0 ? 0 : v[m - 1]) / 1000.0);
        add(label, "cpu all threads", "ns/task", (double) cpu / n);
    }

    static long pct(long[] sorted, double p) {
        if (sorted.length == 0) return 0;
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        rank = Math.max(1, Math.min(sorted.length, rank));
        return sorted[rank - 1];
    }

    static final class FixedRateTask implements Runnable {
        final long t0, period, tEnd;
        long k, runs, worst;
        FixedRateTask(long t0, long period, long tEnd) { this.t0 = t0; this.period = period; this.tEnd = tEnd; }
        @Override public void run() {
            long now = System.nanoTime();
            long due = t0 + period * k;
            k++;
            if (now - tEnd <= 0) {
                runs++;
                long drift = Math.max(0, now - due);
                if (drift > worst) worst = drift;
            }
        }
    }

    void w5() {
        int n = p.nFixedRate;
        long period = p.w5PeriodNs;
        ScheduledExecutorService ex = pool();
        long c0 = processCpuNs();
        long tStart = System.nanoTime();
        long tEnd = tStart + p.w5DurationNs;
        FixedRateTask[] tasks = new FixedRateTask[n];
        ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
        for (int i = 0; i < n; i++) {
            tasks[i] = new FixedRateTask(System.nanoTime(), period, tEnd);
            hs[i] = ex.scheduleAtFixedRate(tasks[i], 0, period, TimeUnit.NANOSECONDS);
        }
        // parkNanos may return early, for no reason at all (its contract): loop.
        long until = tEnd + 20_000_000L;
        for (long left; (left = until - System.nanoTime()) > 0; ) LockSupport.parkNanos(left);
        long cpu = processCpuNs() - c0;
        for (ScheduledFuture<?> h : hs) h.cancel(false);
        teardown(ex); // happens-before: the task fields are read after termination
        long expected = 0, runs = 0, worst = 0;
        for (FixedRateTask t : tasks) {
            expected += Math.max(0, tEnd - t.t0) / period + 1;
            runs += t.runs;
            worst = Math.max(worst, t.worst);
        }
        add("W5", "runs/expected", "ratio", (double) runs / expected);
        add("W5", "worst drift", "us", worst / 1000.0);
        add("W5", "cpu all threads", "ns/run", (double) cpu / Math.max(1, runs));
    }

    /**
     * W7: two producer threads schedule tasks with delays in [0, 10 ms) while the pool runs
     * them. W7X8 (issue 33): the same 2 × n tasks from eight producers (n / 4 each, seed
     * SEED_PRODUCER + k), as in workloads.rs.
     */
    void w7(String label) throws Exception {
        int producersN = label.equals("W7X8") ? 8 : 2;
        int n = 2 * p.nPerProducer / producersN;
        long[][] ds = new long[producersN][];
        for (int k = 0; k < producersN; k++) ds[k] = delays(SEED_PRODUCER + k, n, 0, p.w7WindowNs);
        ScheduledExecutorService ex = pool();
        Latch l = new Latch(producersN * n);
        Runnable r = l::hit;
        CyclicBarrier barrier = new CyclicBarrier(producersN + 1);
        long c0 = processCpuNs();
        Thread[] producers = new Thread[producersN];
        for (int k = 0; k < producersN; k++) {
            final long[] d = ds[k];
            producers[k] = new Thread(() -> {
                try { barrier.await(); } catch (Exception e) { throw new RuntimeException(e); }
                for (long x : d) ex.schedule(r, x, TimeUnit.NANOSECONDS);
                PRODUCERS_CPU.addAndGet(threadCpuNs());
            }, PRODUCER + "-" + k);
            producers[k].start();
        }
        barrier.await();
        long t = System.nanoTime();
        boolean ok = l.await(120_000_000_000L);
        long el = System.nanoTime() - t;
        for (Thread th : producers) th.join();
        long cpu = processCpuNs() - c0;
        teardown(ex);
        double total = (double) producersN * n;
        add(label, "throughput", "tasks/s", ok ? total / (el / 1e9) : Double.NaN);
        add(label, "cpu all threads", "ns/task", (double) cpu / total);
    }

    static String sizeLabel(int n) {
        if (n >= 1_000_000 && n % 1_000_000 == 0) return (n / 1_000_000) + "M";
        if (n >= 1000 && n % 1000 == 0) return (n / 1000) + "k";
        return Integer.toString(n);
    }

    void w8() {
        for (int n : p.w8Sizes) {
            int k = Math.max(1, Math.min(n / 10, p.w8MinCancels));
            int reps = (p.w8MinCancels + k - 1) / k;
            long[] ds = delays(SEED_W8 ^ n, n, LONG_MIN, LONG_SPAN);
            Rng rng = new Rng(SEED_W8 + n);
            int[] idx = new int[n];
            for (int i = 0; i < n; i++) idx[i] = i;
            long total = 0, count = 0, cpu = 0;
            for (int rep = 0; rep < reps; rep++) {
                ScheduledExecutorService ex = pool();
                ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
                for (int i = 0; i < n; i++) hs[i] = ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
                for (int i = 0; i < k; i++) {
                    int j = i + (int) rng.below(n - i);
                    int tmp = idx[i]; idx[i] = idx[j]; idx[j] = tmp;
                }
                long c0 = processCpuNs();
                long t = System.nanoTime();
                for (int i = 0; i < k; i++) hs[idx[i]].cancel(false);
                total += System.nanoTime() - t;
                cpu += processCpuNs() - c0;
                count += k;
                teardown(ex);
            }
            add("W8", "cancel@" + sizeLabel(n), "ns/op", (double) total / count);
            add("W8", "cpu@" + sizeLabel(n), "ns/op", (double) cpu / count);
        }
    }

    // ---- W9: timeouts (most cancelled before they fire), as in workloads.rs ----
    static final byte W9_CANCEL = 1;

    /** One producer's plan, drawn before the run (the same draws as w9_plan in workloads.rs). */
    static final class W9Plan {
        int first;
        long[] delay;
        byte[] flags;
        long[] cancelAt; // ns after the start, sorted (with cancelIdx) by (time, task)
        int[] cancelIdx;
    }

    W9Plan w9Plan(long seed, int first) {
        int n = (int) (p.w9Rate * p.w9DurationNs / 1_000_000_000L);
        if (n >= (1 << 21)) throw new IllegalArgumentException("W9: too many tasks per producer: " + n);
        long period = 1_000_000_000L / p.w9Rate;
        Rng rng = new Rng(seed);
        W9Plan pl = new W9Plan();
        pl.first = first;
        pl.delay = new long[n];
        pl.flags = new byte[n];
        long[] keys = new long[n];
        int m = 0;
        for (int i = 0; i < n; i++) {
            pl.delay[i] = 5_000_000L + rng.below(10_000_000L);
            boolean cancel = rng.below(10) < 9;
            long at = i * period + rng.below(4_000_000L);
            if (cancel) {
                pl.flags[i] = W9_CANCEL;
                keys[m++] = (at << 21) | i;
            }
        }
        keys = Arrays.copyOf(keys, m);
        Arrays.sort(keys);
        pl.cancelAt = new long[m];
        pl.cancelIdx = new int[m];
        for (int k = 0; k < m; k++) {
            pl.cancelAt[k] = keys[k] >>> 21;
            pl.cancelIdx[k] = (int) (keys[k] & ((1 << 21) - 1));
        }
        return pl;
    }

    /** What W9's tasks write, indexed by the task's global number. */
    static final class W9St {
        final long base;
        final AtomicIntegerArray fired;
        final AtomicLongArray firedAt;
        final AtomicLong firedKept = new AtomicLong();
        W9St(long base, int total) {
            this.base = base;
            fired = new AtomicIntegerArray(total);
            firedAt = new AtomicLongArray(total);
        }
        long now() { return System.nanoTime() - base + 1; }
    }

    static final class W9Task implements Runnable {
        final W9St st; final int idx; final byte flags;
        W9Task(W9St st, int idx, byte flags) { this.st = st; this.idx = idx; this.flags = flags; }
        @Override public void run() {
            st.fired.setPlain(idx, 1);
            if ((flags & W9_CANCEL) != 0) st.firedAt.setPlain(idx, st.now());
            else st.firedKept.incrementAndGet();
        }
    }

    /** What one producer measured. */
    static final class W9Out {
        long scheduled, cancelled, wallSched, wallCancel, cpuSched, cpuCancel, maxLag;
        /** The producer's involuntary context switches over its whole run (-1: unknown). */
        long preempted = -1;
        boolean[] cancelOk;
        int nb;
        int[] burstFirst = new int[1024]; // first cancel position of each burst
        long[] burstEnd = new long[1024]; // when its cancel phase ended, ns since base
    }

    /** The paced loop of one producer: each burst schedules what the plan says is
     *  due by now, then cancels what is due by now, then sleeps (at least 200 µs). */
    static W9Out w9Producer(ScheduledExecutorService ex, W9Plan plan, W9St st, long rate) {
        final long quantum = 200_000L;
        long period = 1_000_000_000L / rate;
        int n = plan.delay.length, m = plan.cancelAt.length;
        W9Out out = new W9Out();
        out.cancelOk = new boolean[n];
        ScheduledFuture<?>[] pending = new ScheduledFuture<?>[n];
        int nextS = 0, nextC = 0;
        long[] sw0 = threadSwitches();
        while (nextS < n || nextC < m) {
            long c0 = threadCpuNs();
            long top = System.nanoTime();
            long now = top - st.base;
            if (nextS < n) out.maxLag = Math.max(out.maxLag, now - nextS * period);
            while (nextS < n && nextS * period <= now) {
                byte flags = plan.flags[nextS];
                ScheduledFuture<?> h = ex.schedule(new W9Task(st, plan.first + nextS, flags),
                        plan.delay[nextS], TimeUnit.NANOSECONDS);
                if ((flags & W9_CANCEL) != 0) pending[nextS] = h;
                nextS++;
            }
            long t1 = System.nanoTime();
            long c1 = threadCpuNs();
            long t2 = System.nanoTime();
            if (out.nb == out.burstFirst.length) {
                out.burstFirst = Arrays.copyOf(out.burstFirst, 2 * out.nb);
                out.burstEnd = Arrays.copyOf(out.burstEnd, 2 * out.nb);
            }
            out.burstFirst[out.nb] = nextC;
            while (nextC < m && plan.cancelAt[nextC] <= now) {
                int i = plan.cancelIdx[nextC];
                ScheduledFuture<?> h = pending[i];
                pending[i] = null;
                out.cancelOk[i] = h.cancel(false);
                nextC++;
            }
            long t3 = System.nanoTime();
            long c3 = threadCpuNs();
            out.burstEnd[out.nb++] = t3 - st.base;
            out.wallSched += t1 - top;
            out.wallCancel += t3 - t2;
            out.cpuSched += c1 - c0;
            out.cpuCancel += c3 - c1;
            long nextEvent;
            if (nextS < n && nextC < m) nextEvent = Math.min(nextS * period, plan.cancelAt[nextC]);
            else if (nextS < n) nextEvent = nextS * period;
            else if (nextC < m) nextEvent = plan.cancelAt[nextC];
            else break;
            long wait = Math.max(nextEvent - (System.nanoTime() - st.base), quantum);
            long until = System.nanoTime() + wait;
            for (long left = wait; left > 0; left = until - System.nanoTime()) LockSupport.parkNanos(left);
        }
        long[] sw1 = threadSwitches();
        if (sw0[1] >= 0 && sw1[1] >= 0) out.preempted = sw1[1] - sw0[1];
        out.scheduled = n;
        out.cancelled = m;
        return out;
    }

    void w9(String label) throws Exception {
        int nPer = (int) (p.w9Rate * p.w9DurationNs / 1_000_000_000L);
        W9Plan[] plans = { w9Plan(SEED_W9, 0), w9Plan(SEED_W9 + 1, nPer) };
        int total = 2 * nPer;
        long kept = 0;
        for (W9Plan pl : plans) kept += pl.delay.length - pl.cancelAt.length;
        ScheduledExecutorService ex = pool();
        W9St st = new W9St(System.nanoTime() + 2_000_000L, total);
        for (long left; (left = st.base - System.nanoTime()) > 0; ) LockSupport.parkNanos(left);
        long cpu0 = processCpuNs();
        W9Out[] outs = new W9Out[2];
        Thread[] producers = new Thread[2];
        for (int k = 0; k < 2; k++) {
            final int kk = k;
            producers[k] = new Thread(() -> {
                outs[kk] = w9Producer(ex, plans[kk], st, p.w9Rate);
                PRODUCERS_CPU.addAndGet(threadCpuNs());
            }, PRODUCER + "-" + k);
            producers[k].start();
        }
        for (Thread t : producers) t.join();
        long queueLen = queueLen(ex);
        long tWait = System.nanoTime();
        while (st.firedKept.get() < kept && System.nanoTime() - tWait < 10_000_000_000L) LockSupport.parkNanos(500_000L);
        long cpu = processCpuNs() - cpu0;
        long firedKept = st.firedKept.get();
        teardown(ex);

        long scheduled = 0, cancelled = 0, wallS = 0, wallC = 0, cpuS = 0, cpuC = 0, lag = 0;
        long preempted = 0;
        for (W9Out o : outs) {
            preempted = (preempted < 0 || o.preempted < 0) ? -1 : preempted + o.preempted;
            scheduled += o.scheduled; cancelled += o.cancelled;
            wallS += o.wallSched; wallC += o.wallCancel; cpuS += o.cpuSched; cpuC += o.cpuCancel;
            lag = Math.max(lag, o.maxLag);
        }
        // A planned cancel's task that ran: before its cancel's burst ended (a late
        // cancel), or after a cancel that returned true (a cancel that did not stop it).
        long firedAfterCancel = 0, late = 0;
        for (int k = 0; k < 2; k++) {
            W9Plan plan = plans[k];
            W9Out o = outs[k];
            for (int pos = 0; pos < plan.cancelIdx.length; pos++) {
                int i = plan.cancelIdx[pos];
                int g = plan.first + i;
                if (st.fired.get(g) == 0) continue;
                long at = st.firedAt.get(g) - 1;
                // the last burst whose first cancel position is <= pos
                int lo = 0, hi = o.nb;
                while (lo < hi) { int mid = (lo + hi) >>> 1; if (o.burstFirst[mid] <= pos) lo = mid + 1; else hi = mid; }
                int b = lo - 1;
                if (at > o.burstEnd[b] && o.cancelOk[i]) firedAfterCancel++; else late++;
            }
        }
        String w = label;
        add(w, "rate/producer", "1/s", p.w9Rate);
        add(w, "pair (caller)", "ns", (double) wallS / scheduled + (double) wallC / cancelled);
        add(w, "schedule (caller)", "ns/op", (double) wallS / scheduled);
        add(w, "cancel (caller)", "ns/op", (double) wallC / cancelled);
        add(w, "pair (caller cpu)", "ns", (double) cpuS / scheduled + (double) cpuC / cancelled);
        if (preempted >= 0) add(w, "producer preempted", "per 1k pairs", preempted * 1000.0 / cancelled);
        add(w, "cpu all threads", "ns/timeout", (double) cpu / scheduled);
        add(w, "kept fired", "ratio", (double) firedKept / kept);
        add(w, "cancelled fired", "count", firedAfterCancel);
        add(w, "late cancels", "count", late);
        if (queueLen >= 0) add(w, "queue_len after", "tasks", queueLen);
        add(w, "pacing lag max", "us", lag / 1000.0);
    }

    // ---- W4L, W9L: two busy loops (the Rust workloads binary, `--burn`) ----
    static final class Burners implements AutoCloseable {
        final List<Process> procs = new ArrayList<>();
        long started, cpu0;
        Burners(String exe, int n) throws IOException {
            for (int i = 0; i < n; i++) {
                procs.add(new ProcessBuilder(exe, "--burn").redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            try { Thread.sleep(200); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            started = System.nanoTime();
            cpu0 = cpuNs();
        }
        /** The burners' CPU so far, ns (/proc/<pid>/stat utime + stime, at 100 ticks/s). */
        long cpuNs() {
            long sum = 0;
            for (Process pr : procs) {
                try {
                    String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pr.pid() + "/stat")));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    sum += (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
                } catch (IOException | RuntimeException e) {
                    // gone: counts nothing
                }
            }
            return sum;
        }
        double cores() { return (double) (cpuNs() - cpu0) / (System.nanoTime() - started); }
        @Override public void close() {
            for (Process pr : procs) pr.destroyForcibly(); // SIGKILL to this child's pid
            for (Process pr : procs) {
                try {
                    pr.waitFor();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    // ---- output ----
    static String fmt(double v) {
        if (Double.isNaN(v)) return "n/a";
        if (Math.abs(v) >= 1000) return String.format(Locale.ROOT, "%.0f", v);
        if (Math.abs(v) >= 10) return String.format(Locale.ROOT, "%.1f", v);
        return String.format(Locale.ROOT, "%.3f", v);
    }

    static String loadavg() {
        try {
            String[] s = new String(Files.readAllBytes(Paths.get("/proc/loadavg"))).trim().split("\\s+");
            return s[0] + " " + s[1] + " " + s[2];
        } catch (IOException e) {
            return "?";
        }
    }

    void printTable(String header) {
        System.out.println();
        System.out.println(header);
        System.out.println(String.format(Locale.ROOT, "%-4s %-18s %-11s %22s", "work", "metric", "unit", IMPL));
        List<Row> sorted = new ArrayList<>(rows);
        sorted.sort((a, b) -> a.workload.compareTo(b.workload)); // stable: keeps metric order
        for (Row r : sorted) {
            System.out.println(String.format(Locale.ROOT, "%-4s %-18s %-11s %22s", r.workload, r.metric, r.unit, fmt(r.value)));
        }
    }

    void write(Path csv, String load0, String load1, double secs) throws IOException {
        if (csv.getParent() != null) Files.createDirectories(csv.getParent());
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
            w.println("impl,workload,metric,unit,value");
            for (Row r : rows) w.println(IMPL + "," + r.workload + "," + r.metric + "," + r.unit + "," + r.value);
        }
        String name = csv.getFileName().toString();
        Path json = csv.resolveSibling(name.endsWith(".csv") ? name.substring(0, name.length() - 4) + ".json" : name + ".json");
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(json))) {
            w.println("{");
            w.println("  \"harness\": \"StpeBench.java\",");
            w.println("  \"java\": \"" + System.getProperty("java.vm.name") + " " + System.getProperty("java.version") + "\",");
            w.println("  \"run\": " + run + ",");
            w.println("  \"quick\": " + p.quick + ",");
            w.println("  \"threads\": 2,");
            w.println("  \"loadavg_start\": \"" + load0 + "\",");
            w.println("  \"loadavg_end\": \"" + load1 + "\",");
            w.println(String.format(Locale.ROOT, "  \"wall_seconds\": %.1f,", secs));
            w.println("  \"rows\": [");
            for (int i = 0; i < rows.size(); i++) {
                Row r = rows.get(i);
                String v = Double.isFinite(r.value) ? Double.toString(r.value) : "null";
                w.println("    {\"impl\": \"" + IMPL + "\", \"workload\": \"" + r.workload + "\", \"metric\": \"" + r.metric
                        + "\", \"unit\": \"" + r.unit + "\", \"value\": " + v + "}" + (i + 1 < rows.size() ? "," : ""));
            }
            w.println("  ]");
            w.println("}");
        }
        System.err.println("wrote " + csv + " and " + json);
    }

    public static void main(String[] args) throws Exception {
        int run = 0;
        Path csv = null;
        Path outDir = Paths.get("target", "bench-results");
        List<String> only = null;
        String burner = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--impl": IMPL = args[++i]; break;
                case "--burner": burner = args[++i]; break;
                case "--run": run = Integer.parseInt(args[++i]); break;
                case "--csv": csv = Paths.get(args[++i]); break;
                case "--out-dir": outDir = Paths.get(args[++i]); break;
                case "--only": only = Arrays.asList(args[++i].toUpperCase(Locale.ROOT).split(",")); break;
                default: System.err.println("ignoring argument " + args[i]);
            }
        }
        if (!IMPL.equals("jdk17-stpe") && !IMPL.equals("jdk25-stpe") && !IMPL.equals("jdk25-fjp")) {
            System.err.println("unknown --impl " + IMPL + " (jdk17-stpe, jdk25-stpe, jdk25-fjp)");
            System.exit(2);
        }
        FJP = IMPL.endsWith("-fjp");
        int feature = Runtime.version().feature();
        if (feature != Integer.parseInt(IMPL.substring(3, 5))) {
            System.err.println("warning: --impl " + IMPL + " on Java " + Runtime.version() + " (the column's name is wrong)");
        }
        if (FJP && !((Object) new ForkJoinPool(1) instanceof ScheduledExecutorService)) {
            System.err.println("--impl " + IMPL + ": ForkJoinPool is no ScheduledExecutorService on Java " + Runtime.version() + " (needs 25)");
            System.exit(2);
        }
        if (csv == null) csv = outDir.resolve("jdk.csv");
        Params p = Params.fromEnv();
        StpeBench b = new StpeBench(p, run, outDir);
        String load0 = loadavg();
        long t = System.nanoTime();
        System.err.println("StpeBench: quick=" + p.quick + " run=" + run + " loadavg=" + load0 + " java=" + System.getProperty("java.version"));
        System.err.println("[" + IMPL + "] warm-up ...");
        b.warmup();
        if (wants(only, "W1") || wants(only, "W2")) { System.err.println("[" + IMPL + "] W1/W2 time ..."); b.w1w2(); }
        if (wants(only, "W2") || wants(only, "W6")) { System.err.println("[" + IMPL + "] W2/W6 heap ..."); b.memory(); }
        if (wants(only, "W3")) { System.err.println("[" + IMPL + "] W3 ..."); b.w3("W3"); }
        if (wants(only, "W3S")) { System.err.println("[" + IMPL + "] W3S ..."); b.w3("W3S"); }
        if (wants(only, "W4")) { System.err.println("[" + IMPL + "] W4 ..."); b.w4("W4"); }
        if (wants(only, "W5")) { System.err.println("[" + IMPL + "] W5 ..."); b.w5(); }
        if (wants(only, "W7")) { System.err.println("[" + IMPL + "] W7 ..."); b.w7("W7"); }
        if (wants(only, "W7X8")) { System.err.println("[" + IMPL + "] W7x8 ..."); b.w7("W7X8"); }
        if (wants(only, "W8")) { System.err.println("[" + IMPL + "] W8 ..."); b.w8(); }
        if (wants(only, "W9")) { System.err.println("[" + IMPL + "] W9 ..."); b.w9("W9"); }
        if (wants(only, "W4L") || wants(only, "W9L")) {
            if (burner == null) {
                System.err.println("[" + IMPL + "] W4L/W9L SKIPPED: no --burner PATH (the workloads binary)");
            } else {
                if (wants(only, "W4L")) {
                    System.err.println("[" + IMPL + "] W4L (2 burners) ...");
                    try (Burners bu = new Burners(burner, 2)) { b.w4("W4L"); b.add("W4L", "burners", "cores", bu.cores()); }
                }
                if (wants(only, "W9L")) {
                    System.err.println("[" + IMPL + "] W9L (2 burners) ...");
                    try (Burners bu = new Burners(burner, 2)) { b.w9("W9L"); b.add("W9L", "burners", "cores", bu.cores()); }
                }
            }
        }
        double secs = (System.nanoTime() - t) / 1e9;
        String load1 = loadavg();
        b.printTable(String.format(Locale.ROOT, "schedpool workloads, JDK side (run %d, quick=%s, %.1f s, loadavg %s -> %s)",
                run, p.quick, secs, load0, load1));
        b.write(csv, load0, load1, secs);
    }

    static boolean wants(List<String> only, String w) { return only == null || only.contains(w); }
}
