// The JDK side of the schedpool benchmark harness (the "Performance" issue):
// the workloads W1–W8 of benches/workloads.rs, run on JDK 17's
// java.util.concurrent.ScheduledThreadPoolExecutor with 2 core threads and
// setRemoveOnCancelPolicy(true). Same seeded delays and cancel order as the Rust
// side (SplitMix64, same seeds), same table, same CSV columns:
//   impl,workload,metric,unit,value
//
//   javac -d target/jdk-bench benches/jdk/StpeBench.java
//   java -Xms3g -Xmx3g -cp target/jdk-bench StpeBench [--run N] [--csv PATH] [--out-dir DIR] [--only W1,W4]
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
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

public final class StpeBench {
    static final String IMPL = "jdk17-stpe";

    // ---- parameters (keep in sync with benches/common/mod.rs) ----
    static final class Params {
        boolean quick;
        int nPending, nZero, nLateness, nFixedRate, nPerProducer, w8MinCancels;
        long w4WindowNs, w5PeriodNs, w5DurationNs, w7WindowNs;
        int[] w8Sizes;

        static Params fromEnv() {
            String q = System.getenv("SCHEDPOOL_BENCH_QUICK");
            Params p = new Params();
            p.quick = q != null && !q.isEmpty() && !q.equals("0");
            if (p.quick) {
                p.nPending = 20_000; p.nZero = 20_000; p.nLateness = 1_000;
                p.w4WindowNs = 200_000_000L; p.nFixedRate = 100; p.w5PeriodNs = 1_000_000L;
                p.w5DurationNs = 300_000_000L; p.nPerProducer = 10_000; p.w7WindowNs = 10_000_000L;
                p.w8Sizes = new int[] {1_000, 10_000}; p.w8MinCancels = 1_000;
            } else {
                p.nPending = 1_000_000; p.nZero = 1_000_000; p.nLateness = 10_000;
                p.w4WindowNs = 1_000_000_000L; p.nFixedRate = 1_000; p.w5PeriodNs = 1_000_000L;
                p.w5DurationNs = 2_000_000_000L; p.nPerProducer = 500_000; p.w7WindowNs = 10_000_000L;
                p.w8Sizes = new int[] {1_000, 10_000, 100_000, 1_000_000}; p.w8MinCancels = 10_000;
            }
            return p;
        }
    }

    static final long LONG_MIN = 3_600_000_000_000L; // 1 h in ns
    static final long LONG_SPAN = 3_600_000_000_000L;
    static final long SEED_DELAYS = 0x5EED0001L, SEED_PERM = 0x5EED0002L, SEED_LATENESS = 0x5EED0004L,
            SEED_PRODUCER = 0x5EED0007L, SEED_W8 = 0x5EED0008L;

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
    static ScheduledThreadPoolExecutor pool() {
        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(2);
        ex.setRemoveOnCancelPolicy(true);
        ex.prestartAllCoreThreads(); // the Rust pools start their threads eagerly too
        return ex;
    }

    static void teardown(ScheduledThreadPoolExecutor ex) {
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
            ScheduledThreadPoolExecutor ex = pool();
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
        ScheduledThreadPoolExecutor ex = pool();
        ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
        long t = System.nanoTime();
        for (int i = 0; i < n; i++) hs[i] = ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
        long sched = System.nanoTime() - t;
        t = System.nanoTime();
        for (int i = 0; i < n; i++) hs[perm[i]].cancel(false);
        long cancel = System.nanoTime() - t;
        teardown(ex);
        add("W1", "schedule", "ns/op", (double) sched / n);
        add("W2", "cancel", "ns/op", (double) cancel / n);
    }

    void memory() {
        int n = p.nPending;
        long[] ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
        int[] perm = permutation(SEED_PERM, n);

        // Pass A: keep the futures, cancel all, drop them.
        ScheduledThreadPoolExecutor ex = pool();
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

    void w3() {
        int n = p.nZero;
        ScheduledThreadPoolExecutor ex = pool();
        Latch l = new Latch(n);
        Runnable r = l::hit;
        long t = System.nanoTime();
        for (int i = 0; i < n; i++) ex.execute(r);
        long submitted = System.nanoTime() - t;
        boolean ok = l.await(120_000_000_000L);
        long el = System.nanoTime() - t;
        teardown(ex);
        add("W3", "throughput", "tasks/s", ok ? n / (el / 1e9) : Double.NaN);
        add("W3", "submit", "ns/op", (double) submitted / n);
    }

    void w4() throws IOException {
        int n = p.nLateness;
        long[] ds = delays(SEED_LATENESS, n, 0, p.w4WindowNs);
        AtomicLongArray late = new AtomicLongArray(n);
        for (int i = 0; i < n; i++) late.set(i, Long.MIN_VALUE);
        Latch l = new Latch(n);
        ScheduledThreadPoolExecutor ex = pool();
        for (int i = 0; i < n; i++) {
            final int idx = i;
            final long deadline = System.nanoTime() + ds[i];
            ex.schedule(() -> {
                late.set(idx, System.nanoTime() - deadline);
                l.hit();
            }, ds[i], TimeUnit.NANOSECONDS);
        }
        boolean ok = l.await(p.w4WindowNs + 30_000_000_000L);
        teardown(ex);
        if (!ok) System.err.println("W4 timed out");
        long[] v = new long[n];
        int m = 0;
        for (int i = 0; i < n; i++) if (late.get(i) != Long.MIN_VALUE) v[m++] = late.get(i);
        v = Arrays.copyOf(v, m);
        Arrays.sort(v);
        Path raw = outDir.resolve("raw");
        Files.createDirectories(raw);
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(raw.resolve("w4-lateness-" + IMPL + "-r" + run + ".csv")))) {
            w.println("lateness_ns");
            for (long x : v) w.println(x);
        }
        add("W4", "p50", "us", pct(v, 50) / 1000.0);
        add("W4", "p99", "us", pct(v, 99) / 1000.0);
        add("W4", "p99.9", "us", pct(v, 99.9) / 1000.0);
        add("W4", "max", "us", (m == 0 ? 0 : v[m - 1]) / 1000.0);
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
        ScheduledThreadPoolExecutor ex = pool();
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
    }

    void w7() throws Exception {
        int n = p.nPerProducer;
        long[][] ds = { delays(SEED_PRODUCER, n, 0, p.w7WindowNs), delays(SEED_PRODUCER + 1, n, 0, p.w7WindowNs) };
        ScheduledThreadPoolExecutor ex = pool();
        Latch l = new Latch(2 * n);
        Runnable r = l::hit;
        CyclicBarrier barrier = new CyclicBarrier(3);
        Thread[] producers = new Thread[2];
        for (int k = 0; k < 2; k++) {
            final long[] d = ds[k];
            producers[k] = new Thread(() -> {
                try { barrier.await(); } catch (Exception e) { throw new RuntimeException(e); }
                for (long x : d) ex.schedule(r, x, TimeUnit.NANOSECONDS);
            });
            producers[k].start();
        }
        barrier.await();
        long t = System.nanoTime();
        boolean ok = l.await(120_000_000_000L);
        long el = System.nanoTime() - t;
        for (Thread th : producers) th.join();
        teardown(ex);
        add("W7", "throughput", "tasks/s", ok ? 2.0 * n / (el / 1e9) : Double.NaN);
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
            long total = 0, count = 0;
            for (int rep = 0; rep < reps; rep++) {
                ScheduledThreadPoolExecutor ex = pool();
                ScheduledFuture<?>[] hs = new ScheduledFuture<?>[n];
                for (int i = 0; i < n; i++) hs[i] = ex.schedule(NOOP, ds[i], TimeUnit.NANOSECONDS);
                for (int i = 0; i < k; i++) {
                    int j = i + (int) rng.below(n - i);
                    int tmp = idx[i]; idx[i] = idx[j]; idx[j] = tmp;
                }
                long t = System.nanoTime();
                for (int i = 0; i < k; i++) hs[idx[i]].cancel(false);
                total += System.nanoTime() - t;
                count += k;
                teardown(ex);
            }
            add("W8", "cancel@" + sizeLabel(n), "ns/op", (double) total / count);
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
        System.out.println(String.format(Locale.ROOT, "%-4s %-18s %-8s %22s", "work", "metric", "unit", IMPL));
        List<Row> sorted = new ArrayList<>(rows);
        sorted.sort((a, b) -> a.workload.compareTo(b.workload)); // stable: keeps metric order
        for (Row r : sorted) {
            System.out.println(String.format(Locale.ROOT, "%-4s %-18s %-8s %22s", r.workload, r.metric, r.unit, fmt(r.value)));
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
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--run": run = Integer.parseInt(args[++i]); break;
                case "--csv": csv = Paths.get(args[++i]); break;
                case "--out-dir": outDir = Paths.get(args[++i]); break;
                case "--only": only = Arrays.asList(args[++i].toUpperCase(Locale.ROOT).split(",")); break;
                default: System.err.println("ignoring argument " + args[i]);
            }
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
        if (wants(only, "W3")) { System.err.println("[" + IMPL + "] W3 ..."); b.w3(); }
        if (wants(only, "W4")) { System.err.println("[" + IMPL + "] W4 ..."); b.w4(); }
        if (wants(only, "W5")) { System.err.println("[" + IMPL + "] W5 ..."); b.w5(); }
        if (wants(only, "W7")) { System.err.println("[" + IMPL + "] W7 ..."); b.w7(); }
        if (wants(only, "W8")) { System.err.println("[" + IMPL + "] W8 ..."); b.w8(); }
        double secs = (System.nanoTime() - t) / 1e9;
        String load1 = loadavg();
        b.printTable(String.format(Locale.ROOT, "schedpool workloads, JDK side (run %d, quick=%s, %.1f s, loadavg %s -> %s)",
                run, p.quick, secs, load0, load1));
        b.write(csv, load0, load1, secs);
    }

    static boolean wants(List<String> only, String w) { return only == null || only.contains(w); }
}
