/*
 * ScenarioRunner: the JDK side of schedpool's differential test
 * (tests/jdk_differential.rs runs the same scenarios on schedpool).
 *
 * Usage:  java -cp <dir> ScenarioRunner <file.scn>...
 * For every file it prints
 *     === <file name without directory>
 *     <trace lines>
 *     === end
 * and the Rust runner (tests/jdk_support/mod.rs) prints the same trace lines
 * for the same file. The two traces must be identical line by line.
 *
 * ---------------------------------------------------------------------------
 * SCENARIO FORMAT (.scn), one directive per line; '#' starts a comment.
 * Times are milliseconds. A DELAY is a decimal i64 (may be negative or
 * 9223372036854775807) or "max" (Java: Long.MAX_VALUE ns after saturation,
 * Rust: Duration::MAX). Negative delays: Java clamps them to 0, Rust uses
 * Duration::ZERO (same behaviour, java-behaviour.md A2.8a).
 *
 * Configuration (must come before the first task; the pool is built lazily):
 *   pool N                         core threads (0 allowed); default 1
 *   policy continue_periodic B     B = true|false (default false)
 *   policy execute_delayed B       B = true|false (default true)
 *   expect-diff DOC-ID             declares a known, documented difference
 *                                  (docs/java-differences.md); required when
 *                                  a '~' directive is used
 * Tasks (ID is a word; each task's body records its runs):
 *   once ID DELAY [opts]           schedule(body, DELAY)
 *   submit ID [opts]               submit(body)
 *   execute ID [opts]              execute(body) (no handle)
 *   rate ID INITIAL PERIOD [opts]  scheduleAtFixedRate
 *   fixed ID INITIAL DELAY [opts]  scheduleWithFixedDelay
 *   -> prints "<kind> ID = ok" or "<kind> ID = rejected" (shutdown or bad period)
 *   many P N                       N tasks P0001..PN (zero-padded to 4 digits), in
 *                                  turn once(0), execute, submit; prints
 *                                  "many P N = ok" (or "= rejected=K")
 * Task options (k is the 1-based run number; without @k: every run):
 *   block=G  block@k=G   the run waits until gate G is opened (uninterruptibly)
 *   sleep=MS sleep@k=MS  the run sleeps (uninterruptibly)
 *   panic@k  panic       the run throws (Java) / panics (Rust) at its end
 *   cancel@k             the run cancels its own handle first (self-cancel)
 *   shutdown@k           the run calls pool shutdown() first
 *   spawn@k=ID2          the run submits a new one-shot task ID2 (delay 0, no
 *                        options) from inside the pool; ID2 can then be used
 *                        like any task, and its final line says spawned=ok|rejected
 *   runs=any             the final summary does not print the run count
 *   A run does, in this order: record start; self-cancel; shutdown; spawn;
 *   block; sleep; record end; panic.
 * Actions and waits (they print nothing unless they time out after 10 s,
 * which prints "TIMEOUT ..."):
 *   gate G                         declares gate G (gates are closed at first)
 *   open G                         opens gate G for good
 *   sleep MS
 *   await-start ID N               until run N of ID has started
 *   await-end ID N                 until run N of ID has finished its body
 *   await-done ID                  until ID's handle is done
 * Recording directives (each prints one line):
 *   cancel ID                      cancel(false); prints its boolean result
 *   state ID                       pending | cancelled | done
 *   delay ID                       the handle's delay, bucketed: 0 (<= 0), <=1s,
 *                                  <=1h, <=1y, >1y
 *   runs ID                        number of runs started
 *   runs ID MIN MAX                whether MIN <= runs <= MAX
 *   order [ID...]                  the start order (one entry per run) of the
 *                                  named tasks (all tasks if none named)
 *   gaps ID MS                     true iff >= 1 gap and every gap between the end
 *                                  of a run and the start of the next is >= MS
 *   burst ID A B MS                start of run B - end of run A <= MS
 *   overlap ID                     whether two runs of ID ever overlapped
 *   ordered P                      whether the tasks of "many P" started in
 *                                  submission order, and how many started
 *   ontime ID MS                   whether run 1 of ID started no earlier than its
 *                                  delay (less 1 ms of clock rounding) after the
 *                                  submission call began, and
 *                                  at most MS after (delay after the call ended)
 *   shutdown                       shutdown()
 *   shutdown-now                   shutdownNow(); prints the sorted IDs of the
 *                                  returned tasks and whether all of their
 *                                  handles were still pending at that moment
 *   await-termination MS           prints awaitTermination's result
 *   pool-state                     isShutdown / isTerminated
 *   queue-len                      getQueue().size() / queue_len()
 *   active                         getActiveCount() / active_count()
 *   completed                      getCompletedTaskCount() / completed_task_count()
 *   task-count                     getTaskCount() / task_count() (differs, see docs)
 *   ~DIRECTIVE                     output may differ; the line is printed with a
 *                                  leading '~' and the harness reports a mismatch
 *                                  there as the known difference, not a failure
 * At the end every task prints, in declaration order,
 *   final ID state=S runs=N [selfcancel=B] [spawned=R]
 * (spawned tasks come last, sorted by ID)
 * with S = pending | ok | failed | cancelled | no-handle | returned; the tasks
 * of "many P" print one line instead:
 *   final P* tasks=N runs=R ok=A failed=B cancelled=C pending=D no-handle=E returned=F
 * ("returned": the task was returned by shutdown-now; Java leaves it pending,
 * schedpool completes it when the PendingTask is run or dropped, a documented
 * difference, so both sides print "returned"). Afterwards the runner opens
 * every gate and shuts the pool down (not recorded).
 * Every trace line starts with "L<source line> " ("L0" for the summary).
 *
 * Conventions that keep Java and Rust comparable:
 *   - setRemoveOnCancelPolicy(true) (schedpool's default);
 *   - cancel is cancel(false) (Rust has no interrupts);
 *   - bodies swallow the interrupts of shutdownNow (Rust has no interrupts),
 *     so a running task always finishes its body.
 */

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

public final class ScenarioRunner {
    static final long AWAIT_MS = 10_000;

    public static void main(String[] args) throws Exception {
        for (String file : args) {
            Path p = Paths.get(file);
            List<String> out;
            try {
                ScenarioRunner r = new ScenarioRunner();
                r.scenario = r.new Scenario(Files.readAllLines(p));
                out = r.scenario.run();
            } catch (Throwable t) {
                out = new ArrayList<>();
                out.add("ERROR " + t);
            }
            StringBuilder sb = new StringBuilder();
            sb.append("=== ").append(p.getFileName()).append('\n');
            for (String l : out) sb.append(l).append('\n');
            sb.append("=== end\n");
            System.out.print(sb);
            System.out.flush();
        }
        System.exit(0);
    }

    // ------------------------------------------------------------------ helpers

    static final class Gate {
        private boolean open;

        synchronized void open() {
            open = true;
            notifyAll();
        }

        synchronized void await() {
            while (!open) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    // swallowed on purpose: Rust has no interrupts
                }
            }
        }
    }

    static void sleepUninterruptibly(long ms) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        for (;;) {
            long left = end - System.nanoTime();
            if (left <= 0) return;
            try {
                TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException e) {
                // swallowed on purpose
            }
        }
    }

    /** The bucket the delay directive prints; the Rust runner has the same. */
    static String bucket(long ns) {
        if (ns <= 0) return "0";
        if (ns <= TimeUnit.SECONDS.toNanos(1)) return "<=1s";
        if (ns <= TimeUnit.HOURS.toNanos(1)) return "<=1h";
        if (ns <= TimeUnit.DAYS.toNanos(366)) return "<=1y";
        return ">1y";
    }

    /** Delay in nanoseconds; "max" saturates like Long.MAX_VALUE DAYS. */
    static long parseDelayNanos(String s) {
        if (s.equals("max")) return TimeUnit.DAYS.toNanos(Long.MAX_VALUE);
        return TimeUnit.MILLISECONDS.toNanos(Long.parseLong(s));
    }

    static final class Executor extends ScheduledThreadPoolExecutor {
        final Map<Object, String> names = Collections.synchronizedMap(new IdentityHashMap<>());

        Executor(int core) {
            super(core);
        }

        @Override
        protected <V> RunnableScheduledFuture<V> decorateTask(Runnable r, RunnableScheduledFuture<V> task) {
            if (r instanceof Task) names.put(task, ((Task) r).id);
            return task;
        }
    }

    final class Task implements Runnable {
        final String id;
        final String kind;
        final Map<String, String> opts = new HashMap<>();
        final List<Long> starts = new ArrayList<>();
        final List<Long> ends = new ArrayList<>();
        volatile Future<?> handle;
        long submitBefore, submitAfter, delayNanos;
        String bulk;
        volatile String spawnedResult;
        volatile Boolean selfCancel;
        volatile boolean overlapped;
        boolean returned;
        private boolean running;

        Task(String id, String kind) {
            this.id = id;
            this.kind = kind;
        }

        String opt(String key, int k) {
            String v = opts.get(key + "@" + k);
            return v != null ? v : opts.get(key);
        }

        synchronized int runs() {
            return starts.size();
        }

        synchronized int endsCount() {
            return ends.size();
        }

        @Override
        public void run() {
            int k;
            synchronized (this) {
                if (running) overlapped = true;
                running = true;
                starts.add(System.nanoTime());
                k = starts.size();
            }
            synchronized (order) {
                order.add(id);
            }
            if (opt("cancel", k) != null) {
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(AWAIT_MS);
                while (handle == null && System.nanoTime() < deadline) sleepUninterruptibly(1);
                Future<?> h = handle;
                selfCancel = h != null && h.cancel(false);
            }
            if (opt("shutdown", k) != null) exec.shutdown();
            String sp = opts.get("spawn@" + k);
            if (sp != null) {
                String r = scenario.submitTask("once", new String[] {"once", sp, "0"}, null);
                tasks.get(sp).spawnedResult = r;
            }
            String g = opt("block", k);
            if (g != null) gates.get(g).await();
            String s = opt("sleep", k);
            if (s != null) sleepUninterruptibly(Long.parseLong(s));
            synchronized (this) {
                ends.add(System.nanoTime());
                running = false;
            }
            if (opt("panic", k) != null) throw new RuntimeException("scenario panic in " + id + " run " + k);
        }
    }

    // ------------------------------------------------------------------ scenario

    final class Scenario {
        final List<String> lines;
        final List<String> out = new ArrayList<>();
        int core = 1;
        boolean continuePeriodic = false;
        boolean executeDelayed = true;

        Scenario(List<String> lines) {
            this.lines = lines;
        }

        Executor pool() {
            if (exec == null) {
                exec = new Executor(core);
                exec.setRemoveOnCancelPolicy(true);
                exec.setContinueExistingPeriodicTasksAfterShutdownPolicy(continuePeriodic);
                exec.setExecuteExistingDelayedTasksAfterShutdownPolicy(executeDelayed);
            }
            return exec;
        }

        /** The task named id; waits (up to the await limit) for a spawned one to appear. */
        Task task(String id) {
            waitFor(() -> tasks.containsKey(id));
            Task t = tasks.get(id);
            if (t == null) throw new IllegalArgumentException("unknown task " + id);
            return t;
        }

        void emit(int ln, boolean tilde, String s) {
            out.add("L" + ln + " " + (tilde ? "~" : "") + s);
        }

        boolean waitFor(java.util.function.BooleanSupplier cond) {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(AWAIT_MS);
            while (!cond.getAsBoolean()) {
                if (System.nanoTime() - deadline > 0) return false;
                sleepUninterruptibly(1);
            }
            return true;
        }

        List<String> run() throws Exception {
            // pre-pass: declare every gate named anywhere
            for (String raw : lines) {
                String[] w = words(raw);
                if (w.length >= 2 && (w[0].equals("gate") || w[0].equals("open"))) gates.putIfAbsent(w[1], new Gate());
                for (String word : w) {
                    if (word.startsWith("block") && word.indexOf('=') > 0)
                        gates.putIfAbsent(word.substring(word.indexOf('=') + 1), new Gate());
                }
            }
            try {
                for (int i = 0; i < lines.size(); i++) {
                    String[] w = words(lines.get(i));
                    if (w.length == 0) continue;
                    step(i + 1, w);
                }
                Map<String, int[]> bulks = new LinkedHashMap<>();
                List<String> kinds = List.of("ok", "failed", "cancelled", "pending", "no-handle", "returned");
                List<Task> all;
                synchronized (tasks) {
                    all = new ArrayList<>(tasks.values());
                }
                List<Task> spawned = new ArrayList<>();
                for (Task t : all) if (t.spawnedResult != null) spawned.add(t);
                spawned.sort((a, b) -> a.id.compareTo(b.id));
                all.removeAll(spawned);
                all.addAll(spawned);
                for (Task t : all) {
                    if (t.bulk != null) {
                        int[] c = bulks.computeIfAbsent(t.bulk, k -> new int[2 + kinds.size()]);
                        c[0]++;
                        c[1] += t.runs();
                        c[2 + kinds.indexOf(finalState(t))]++;
                        continue;
                    }
                    StringBuilder sb = new StringBuilder("final " + t.id + " state=" + finalState(t));
                    sb.append(" runs=").append("any".equals(t.opts.get("runs")) ? "*" : String.valueOf(t.runs()));
                    if (t.selfCancel != null) sb.append(" selfcancel=").append(t.selfCancel);
                    if (t.spawnedResult != null) sb.append(" spawned=").append(t.spawnedResult);
                    out.add("L0 " + sb);
                }
                for (Map.Entry<String, int[]> e : bulks.entrySet()) {
                    int[] c = e.getValue();
                    StringBuilder sb = new StringBuilder("L0 final " + e.getKey() + "* tasks=" + c[0] + " runs=" + c[1]);
                    for (int i = 0; i < kinds.size(); i++) sb.append(' ').append(kinds.get(i)).append('=').append(c[2 + i]);
                    out.add(sb.toString());
                }
            } finally {
                for (Gate g : gates.values()) g.open();
                if (exec != null) {
                    exec.shutdownNow();
                    exec.awaitTermination(5, TimeUnit.SECONDS);
                }
            }
            return out;
        }

        String finalState(Task t) {
            if (t.returned) return "returned";
            Future<?> h = t.handle;
            if (h == null) return "no-handle";
            if (!h.isDone()) return "pending";
            if (h.isCancelled()) return "cancelled";
            try {
                h.get();
                return "ok";
            } catch (ExecutionException e) {
                return "failed";
            } catch (CancellationException e) {
                return "cancelled";
            } catch (InterruptedException e) {
                return "interrupted";
            }
        }

        /** Submits one task; w is the directive's words (kind, id, delays, options). */
        String submitTask(String d, String[] w, String bulk) {
            int positional = d.equals("once") ? 3 : (d.equals("rate") || d.equals("fixed")) ? 4 : 2;
            Task t = new Task(w[1], d);
            for (int i = positional; i < w.length; i++) {
                int eq = w[i].indexOf('=');
                if (eq < 0) t.opts.put(w[i], "");
                else t.opts.put(w[i].substring(0, eq), w[i].substring(eq + 1));
            }
            if (tasks.containsKey(t.id)) throw new IllegalArgumentException("duplicate task " + t.id);
            tasks.put(t.id, t);
            Executor ex = pool();
            String res = "ok";
            t.delayNanos = d.equals("once") || d.equals("rate") || d.equals("fixed")
                    ? Math.max(0, parseDelayNanos(w[2])) : 0;
            t.submitBefore = System.nanoTime();
            try {
                switch (d) {
                    case "once":
                        t.handle = ex.schedule(t, parseDelayNanos(w[2]), TimeUnit.NANOSECONDS);
                        break;
                    case "submit":
                        t.handle = ex.submit(t);
                        break;
                    case "execute":
                        ex.execute(t);
                        break;
                    case "rate":
                        t.handle = ex.scheduleAtFixedRate(t, parseDelayNanos(w[2]), parseDelayNanos(w[3]),
                                TimeUnit.NANOSECONDS);
                        break;
                    default:
                        t.handle = ex.scheduleWithFixedDelay(t, parseDelayNanos(w[2]), parseDelayNanos(w[3]),
                                TimeUnit.NANOSECONDS);
                }
            } catch (RejectedExecutionException | IllegalArgumentException e) {
                res = "rejected";
            }
            t.submitAfter = System.nanoTime();
            t.bulk = bulk;
            return res;
        }

        String[] words(String raw) {
            int hash = raw.indexOf('#');
            String s = (hash >= 0 ? raw.substring(0, hash) : raw).trim();
            return s.isEmpty() ? new String[0] : s.split("\\s+");
        }

        void step(int ln, String[] w) throws Exception {
            boolean tilde = w[0].startsWith("~");
            String d = tilde ? w[0].substring(1) : w[0];
            switch (d) {
                case "pool":
                    core = Integer.parseInt(w[1]);
                    return;
                case "policy":
                    if (w[1].equals("continue_periodic")) continuePeriodic = Boolean.parseBoolean(w[2]);
                    else if (w[1].equals("execute_delayed")) executeDelayed = Boolean.parseBoolean(w[2]);
                    else throw new IllegalArgumentException("unknown policy " + w[1]);
                    return;
                case "expect-diff":
                case "gate":
                    return;
                case "once":
                case "submit":
                case "execute":
                case "rate":
                case "fixed":
                    emit(ln, tilde, d + " " + w[1] + " = " + submitTask(d, w, null));
                    return;
                case "many": {
                    String prefix = w[1];
                    int n = Integer.parseInt(w[2]);
                    int rejected = 0;
                    for (int i = 1; i <= n; i++) {
                        String id = prefix + String.format("%04d", i);
                        String[] tw = i % 3 == 1 ? new String[] {"once", id, "0"}
                                : i % 3 == 2 ? new String[] {"execute", id} : new String[] {"submit", id};
                        if (!submitTask(tw[0], tw, prefix).equals("ok")) rejected++;
                    }
                    emit(ln, tilde, "many " + prefix + " " + n + " = " + (rejected == 0 ? "ok" : "rejected=" + rejected));
                    return;
                }
                case "ordered": {
                    String prefix = w[1];
                    List<String> seen = new ArrayList<>();
                    synchronized (order) {
                        for (String id : order) {
                            Task t = tasks.get(id);
                            if (t != null && prefix.equals(t.bulk)) seen.add(id);
                        }
                    }
                    List<String> sorted = new ArrayList<>(seen);
                    Collections.sort(sorted);
                    emit(ln, tilde, "ordered " + prefix + " = " + seen.equals(sorted) + " runs=" + seen.size());
                    return;
                }
                case "open":
                    gates.get(w[1]).open();
                    return;
                case "sleep":
                    sleepUninterruptibly(Long.parseLong(w[1]));
                    return;
                case "await-start": {
                    Task t = task(w[1]);
                    int n = Integer.parseInt(w[2]);
                    if (!waitFor(() -> t.runs() >= n)) emit(ln, tilde, "TIMEOUT await-start " + t.id + " " + n + " (runs=" + t.runs() + ")");
                    return;
                }
                case "await-end": {
                    Task t = task(w[1]);
                    int n = Integer.parseInt(w[2]);
                    if (!waitFor(() -> t.endsCount() >= n)) emit(ln, tilde, "TIMEOUT await-end " + t.id + " " + n + " (ends=" + t.endsCount() + ")");
                    return;
                }
                case "await-done": {
                    Task t = task(w[1]);
                    if (t.handle == null || !waitFor(() -> t.handle.isDone())) emit(ln, tilde, "TIMEOUT await-done " + t.id);
                    return;
                }
                case "cancel": {
                    Task t = task(w[1]);
                    emit(ln, tilde, "cancel " + t.id + " = " + (t.handle != null && t.handle.cancel(false)));
                    return;
                }
                case "state": {
                    Task t = task(w[1]);
                    Future<?> h = t.handle;
                    String s = h == null ? "no-handle" : h.isCancelled() ? "cancelled" : h.isDone() ? "done" : "pending";
                    emit(ln, tilde, "state " + t.id + " = " + s);
                    return;
                }
                case "delay": {
                    Task t = task(w[1]);
                    String b = "no-handle";
                    if (t.handle != null) {
                        long ns = ((java.util.concurrent.Delayed) t.handle).getDelay(TimeUnit.NANOSECONDS);
                        b = bucket(ns);
                    }
                    emit(ln, tilde, "delay " + t.id + " = " + b);
                    return;
                }
                case "runs": {
                    Task t = task(w[1]);
                    int r = t.runs();
                    if (w.length >= 4) {
                        long lo = Long.parseLong(w[2]), hi = Long.parseLong(w[3]);
                        emit(ln, tilde, "runs " + t.id + " in [" + lo + "," + hi + "] = " + (lo <= r && r <= hi));
                    } else {
                        emit(ln, tilde, "runs " + t.id + " = " + r);
                    }
                    return;
                }
                case "order": {
                    List<String> sel = new ArrayList<>();
                    synchronized (order) {
                        for (String id : order) {
                            boolean want = w.length == 1;
                            for (int i = 1; i < w.length; i++) want |= w[i].equals(id);
                            if (want) sel.add(id);
                        }
                    }
                    emit(ln, tilde, "order = " + String.join(" ", sel));
                    return;
                }
                case "gaps": {
                    Task t = task(w[1]);
                    long ms = Long.parseLong(w[2]);
                    boolean ok;
                    synchronized (t) {
                        int n = Math.min(t.ends.size(), t.starts.size() - 1);
                        ok = n >= 1;
                        for (int i = 0; i < n; i++)
                            ok &= t.starts.get(i + 1) - t.ends.get(i) >= TimeUnit.MILLISECONDS.toNanos(ms);
                    }
                    emit(ln, tilde, "gaps " + t.id + " >= " + ms + "ms = " + ok);
                    return;
                }
                case "burst": {
                    Task t = task(w[1]);
                    int a = Integer.parseInt(w[2]), b = Integer.parseInt(w[3]);
                    long ms = Long.parseLong(w[4]);
                    String r;
                    synchronized (t) {
                        if (t.ends.size() < a || t.starts.size() < b) r = "missing-runs";
                        else r = String.valueOf(t.starts.get(b - 1) - t.ends.get(a - 1) <= TimeUnit.MILLISECONDS.toNanos(ms));
                    }
                    emit(ln, tilde, "burst " + t.id + " end " + a + " -> start " + b + " <= " + ms + "ms = " + r);
                    return;
                }
                case "ontime": {
                    Task t = task(w[1]);
                    long ms = Long.parseLong(w[2]);
                    String r;
                    synchronized (t) {
                        if (t.starts.isEmpty()) r = "not-run";
                        else {
                            long st = t.starts.get(0);
                            r = String.valueOf(st - t.submitBefore + TimeUnit.MILLISECONDS.toNanos(1) >= t.delayNanos
                                    && st - t.submitAfter <= t.delayNanos + TimeUnit.MILLISECONDS.toNanos(ms));
                        }
                    }
                    emit(ln, tilde, "ontime " + t.id + " within " + ms + "ms = " + r);
                    return;
                }
                case "overlap": {
                    Task t = task(w[1]);
                    emit(ln, tilde, "overlap " + t.id + " = " + t.overlapped);
                    return;
                }
                case "shutdown":
                    pool().shutdown();
                    emit(ln, tilde, "shutdown");
                    return;
                case "shutdown-now": {
                    List<Runnable> got = pool().shutdownNow();
                    List<String> ids = new ArrayList<>();
                    boolean allPending = true;
                    for (Runnable r : got) {
                        String id = exec.names.get(r);
                        ids.add(id == null ? "?" : id);
                        if (r instanceof Future && ((Future<?>) r).isDone()) allPending = false;
                        if (id != null) tasks.get(id).returned = true;
                    }
                    Collections.sort(ids);
                    emit(ln, tilde, "shutdown-now = [" + String.join(", ", ids) + "] all-pending=" + allPending);
                    return;
                }
                case "await-termination":
                    emit(ln, tilde, "await-termination = " + pool().awaitTermination(Long.parseLong(w[1]), TimeUnit.MILLISECONDS));
                    return;
                case "pool-state":
                    emit(ln, tilde, "shutdown=" + pool().isShutdown() + " terminated=" + pool().isTerminated());
                    return;
                case "queue-len":
                    emit(ln, tilde, "queue-len = " + pool().getQueue().size());
                    return;
                case "active":
                    emit(ln, tilde, "active = " + pool().getActiveCount());
                    return;
                case "completed":
                    emit(ln, tilde, "completed = " + pool().getCompletedTaskCount());
                    return;
                case "task-count":
                    emit(ln, tilde, "task-count = " + pool().getTaskCount());
                    return;
                default:
                    throw new IllegalArgumentException("line " + ln + ": unknown directive " + w[0]);
            }
        }
    }

    // One scenario runs at a time per JVM, so the state below is per scenario:
    // the runner creates a fresh ScenarioRunner for every file.
    final Map<String, Gate> gates = new HashMap<>();
    final Map<String, Task> tasks = Collections.synchronizedMap(new LinkedHashMap<>());
    volatile Scenario scenario;
    final List<String> order = new ArrayList<>();
    volatile Executor exec;

}
