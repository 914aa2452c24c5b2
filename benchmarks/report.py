#!/usr/bin/env python3
# Copyright 2026 The rfrpc Authors.
"""Plots and summary for one benchmarks/run_all.sh results folder.

  python3 benchmarks/report.py benchmarks/results/<date>-<provider>

Reads the expN_*.csv files run_all.sh wrote, draws one PNG per plot with
gnuplot (pngcairo), and writes summary.md: the headline table (each row names
the provider, threads, sizes, the paper figure it mirrors and the load
average), the targets met or missed, and the list of files. Standard library
only; a missing or empty CSV leaves its row saying so.
"""

import csv
import os
import subprocess
import sys

VERBS_LABEL = "Soft-RoCE under qemu TCG: correctness, not hardware speed"


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    return list(csv.DictReader(lines))


def num(row, key, default=0.0):
    try:
        return float(row.get(key, default))
    except (TypeError, ValueError):
        return default


def fmt(x):
    if x >= 1e6:
        return "%.2f M" % (x / 1e6)
    if x >= 1e3:
        return "%.1f K" % (x / 1e3)
    return "%.0f" % x


def loads(rows):
    vals = [num(r, "loadavg", -1) for r in rows if num(r, "loadavg", -1) >= 0]
    if not vals:
        return "?"
    return "%.1f-%.1f" % (min(vals), max(vals)) if max(vals) - min(vals) >= 0.1 else "%.1f" % vals[0]


class Plotter:
    def __init__(self, out, provider):
        self.out = out
        self.suffix = ""
        if provider == "verbs":
            self.suffix = "\\n" + VERBS_LABEL
        elif provider == "shm":
            self.suffix = "\\nshm provider: same host, 2 cores (shared)"
        self.made = []

    def plot(self, name, title, xlabel, ylabel, series, logx=False, logy=False,
             style="linespoints", extra="", sort=True):
        """series: list of (label, [(x, y), ...]); sort=False keeps the
        points' order (e.g. by batch size while x is latency)."""
        series = [(l, pts) for l, pts in series if pts]
        if not series:
            return
        png = name + ".png"
        lines = [
            "set terminal pngcairo size 900,560 font 'sans,10' noenhanced",
            "set output '%s'" % os.path.join(self.out, png),
            "set title \"%s%s\"" % (title, self.suffix),
            "set xlabel '%s'" % xlabel,
            "set ylabel '%s'" % ylabel,
            "set grid",
            "set key outside right",
        ]
        if logx:
            lines.append("set logscale x 2")
        if logy:
            lines.append("set logscale y")
        if extra:
            lines.append(extra)
        plots = []
        data = []
        for label, pts in series:
            plots.append("'-' using 1:2 with %s title '%s'" % (style, label))
            data.extend("%g %g" % (x, y) for x, y in (sorted(pts) if sort else pts))
            data.append("e")
        lines.append("plot " + ", ".join(plots))
        script = "\n".join(lines + data) + "\n"
        r = subprocess.run(["gnuplot"], input=script, text=True,
                           capture_output=True)
        if r.returncode != 0:
            print("gnuplot failed for %s: %s" % (name, r.stderr), file=sys.stderr)
            return
        self.made.append(png)


def main():
    out = sys.argv[1]
    meta = {}
    if os.path.exists(os.path.join(out, "meta.txt")):
        for line in open(os.path.join(out, "meta.txt")):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    provider = meta.get("provider", "shm")
    P = Plotter(out, provider)
    rows = []     # Headline table rows.
    targets = []  # (target, measured, verdict)
    label = " (%s)" % VERBS_LABEL if provider == "verbs" else ""

    # 1. Fig. 1 and the transport figures.
    fig1 = read_csv(os.path.join(out, "exp1_fig1_inbound_outbound.csv"))
    lat = read_csv(os.path.join(out, "exp1_transport_latency.csv"))
    rtt = read_csv(os.path.join(out, "exp1_roundtrip.csv"))
    P.plot("exp1_fig1_inbound_outbound",
           "Exp 1 (Fig. 1): out-bound WRITEs vs in-bound READs, %s clients" %
           (fig1[0]["clients"] if fig1 else "?"), "message size (bytes)", "ops/s",
           [("out-bound WRITE, 1 thread", [(num(r, "bytes"), num(r, "out_write_1thr")) for r in fig1]),
            ("in-bound READ, 1 thread", [(num(r, "bytes"), num(r, "in_read_1thr")) for r in fig1]),
            ("in-bound READ, 2 threads", [(num(r, "bytes"), num(r, "in_read_2thr")) for r in fig1])],
           logx=True, logy=True)
    P.plot("exp1_transport_latency", "Exp 1: WRITE/READ p50 latency (one at a time)",
           "message size (bytes)", "p50 latency (ns)",
           [(op, [(num(r, "bytes"), num(r, "p50_ns")) for r in lat if r["op"] == op])
            for op in ("WRITE", "READ")], logx=True, logy=True)
    if fig1:
        small, big = fig1[0], fig1[-1]
        rows.append(("1", "in-bound vs out-bound ops/s", "Fig. 1", provider,
                     "1 (out), 1 and 2 (in)", "%s..%s B" % (small["bytes"], big["bytes"]),
                     "%s B: in READ %s vs out WRITE %s ops/s (%.2fx); %s B: %.2fx" % (
                         small["bytes"], fmt(num(small, "in_read_1thr")),
                         fmt(num(small, "out_write_1thr")),
                         num(small, "in_read_1thr") / max(1, num(small, "out_write_1thr")),
                         big["bytes"],
                         num(big, "in_read_1thr") / max(1, num(big, "out_write_1thr"))),
                     loads(fig1)))
    else:
        rows.append(("1", "in-bound vs out-bound ops/s", "Fig. 1", provider, "-", "-", "no data", "?"))
    via = [r for r in rtt if r["what"] == "write_then_poll_8B"]
    bare = [r for r in rtt if r["what"] == "bare_two_processes"]
    if via and bare:
        ratio = num(via[0], "best_ns") / max(1, num(bare[0], "best_ns"))
        targets.append(("8 B WRITE-then-poll round trip <= 2x bare two-process ping-pong (issue 3)",
                        "best %s ns vs %s ns = %.2fx (medians %s vs %s ns; load %s)" % (
                            via[0]["best_ns"], bare[0]["best_ns"], ratio,
                            via[0]["median_ns"], bare[0]["median_ns"], loads(rtt)),
                        "met" if ratio <= 2 else "MISSED"))

    # 2. Fig. 9.
    f9 = read_csv(os.path.join(out, "exp2_fig9_server_time.csv"))
    modes = ["rf", "server_reply", "hybrid"]
    P.plot("exp2_fig9_server_time",
           "Exp 2 (Fig. 9): echo throughput vs server processing time, 32 B, 1 client thread, 1 worker",
           "server processing time (us)", "calls/s",
           [(m, [(num(r, "server_us"), num(r, "ops_per_s")) for r in f9 if r["mode"] == m]) for m in modes])
    if f9:
        def at(m, us):
            for r in f9:
                if r["mode"] == m and int(num(r, "server_us")) == us:
                    return num(r, "ops_per_s")
            return 0
        last = max(int(num(r, "server_us")) for r in f9)
        rows.append(("2", "rf / server_reply / hybrid vs server time", "Fig. 9", provider,
                     "1 client, 1 worker", "32 B, 0..%d us" % last,
                     "0 us: rf %s, server_reply %s, hybrid %s; %d us: rf %s, server_reply %s, hybrid %s calls/s" % (
                         fmt(at("rf", 0)), fmt(at("server_reply", 0)), fmt(at("hybrid", 0)), last,
                         fmt(at("rf", last)), fmt(at("server_reply", last)), fmt(at("hybrid", last))),
                     loads(f9)))
        rf0 = [r for r in f9 if r["mode"] == "rf" and int(num(r, "server_us")) == 0]
        if rf0:
            targets.append(("unbatched 32 B echo p50 <= 0.5 us, RDMA ops/call <= 2.01 (issue 4; rf, 1 thread)",
                            "p50 %s us, %s ops/call (load %s)" % (rf0[0]["p50_us"], rf0[0]["rdma_ops_per_call"], loads(rf0)),
                            "met" if num(rf0[0], "p50_us") <= 0.5 and num(rf0[0], "rdma_ops_per_call") <= 2.01 else "MISSED"))

    # 3. Fig. 7 and Figs. 11/12.
    f7 = read_csv(os.path.join(out, "exp3_fig7_server_threads.csv"))
    P.plot("exp3_fig7_server_threads",
           "Exp 3 (Fig. 7): throughput vs server threads, 2 client threads, 32 B",
           "server worker threads", "calls/s",
           [(m, [(num(r, "workers"), num(r, "ops_per_s")) for r in f7 if r["mode"] == m]) for m in modes])
    if f7:
        parts = []
        for m in modes:
            mr = [r for r in f7 if r["mode"] == m]
            if mr:
                best = max(mr, key=lambda r: num(r, "ops_per_s"))
                parts.append("%s peak %s at %s workers" % (m, fmt(num(best, "ops_per_s")), best["workers"]))
        rows.append(("3a", "throughput vs server threads", "Fig. 7", provider, "2 clients, %s workers" %
                     ",".join(sorted({r["workers"] for r in f7}, key=int)), "32 B", "; ".join(parts), loads(f7)))
    f11 = read_csv(os.path.join(out, "exp3_fig11_12_connections.csv"))
    series = []
    for layout in ("multi_conn_per_thread", "thread_per_connection"):
        for m in ("rf", "server_reply"):
            series.append(("%s %s" % (layout.replace("_", " "), m),
                           [(num(r, "threads"), num(r, "ops_per_s")) for r in f11
                            if r["label"] == layout and r["mode"] == m]))
    P.plot("exp3_fig11_12_connections",
           "Exp 3 (Figs. 11/12): 2 server threads x C/2 connections vs C threads x 1 connection, 32 B",
           "client connections C (one client thread each)", "calls/s", series)
    if f11:
        parts = []
        for c in sorted({r["threads"] for r in f11}, key=int):
            for m in ("rf", "server_reply"):
                a = [r for r in f11 if r["threads"] == c and r["mode"] == m and r["label"] == "multi_conn_per_thread"]
                b = [r for r in f11 if r["threads"] == c and r["mode"] == m and r["label"] == "thread_per_connection"]
                if a and b:
                    parts.append("C=%s %s: %s vs %s (%.2fx)" % (c, m, fmt(num(a[0], "ops_per_s")), fmt(num(b[0], "ops_per_s")),
                                                            num(a[0], "ops_per_s") / max(1, num(b[0], "ops_per_s"))))
        rows.append(("3b", "multi-connection-per-thread vs thread-per-connection", "Figs. 11/12", provider,
                     "C client threads; 2 vs C workers", "32 B", "; ".join(parts), loads(f11)))

    # 4. Fig. 8.
    cdf = read_csv(os.path.join(out, "exp4_fig8_latency_cdf.csv"))
    pts4 = read_csv(os.path.join(out, "exp4_fig8_points.csv"))
    P.plot("exp4_fig8_latency_cdf", "Exp 4 (Fig. 8): latency CDF, 32 B echo, 1 client thread, 1 worker",
           "latency (us)", "fraction of calls",
           [(m, [(num(r, "latency_us"), num(r, "fraction")) for r in cdf if r["label"].split("/")[0] == m])
            for m in modes], logx=True, style="lines")
    if pts4:
        rows.append(("4", "latency CDF at peak (1 client)", "Fig. 8", provider, "1 client, 1 worker", "32 B",
                     "; ".join("%s p50 %s / p99 %s us" % (r["mode"], r["p50_us"], r["p99_us"]) for r in pts4),
                     loads(pts4)))

    # 5. Figs. 13/14.
    b = read_csv(os.path.join(out, "exp5_fig13_14_batch.csv"))
    fixed = lambda m: [r for r in b if r["mode"] == m and r["batch"] == "fixed"]
    autos = [r for r in b if r["batch"] == "auto"]
    offs = {r["mode"]: r for r in b if r["batch"] == "off"}
    P.plot("exp5_fig13_batch_throughput",
           "Exp 5 (Fig. 13): throughput vs latency; fixed N (avg latency), auto (x = l_limit)",
           "latency (us)", "calls/s",
           [("rf fixed N", [(num(r, "avg_us"), num(r, "ops_per_s")) for r in fixed("rf")]),
            ("server_reply fixed N", [(num(r, "avg_us"), num(r, "ops_per_s")) for r in fixed("server_reply")]),
            ("rf auto (at l_limit)", [(num(r, "limit_us"), num(r, "ops_per_s")) for r in autos]),
            ("unbatched", [(num(r, "avg_us"), num(r, "ops_per_s")) for r in offs.values()])],
           logx=True, style="linespoints", sort=False)
    P.plot("exp5_fig14_batch_latency", "Exp 5 (Fig. 14): latency vs batch size (avg and p95)",
           "batch size N", "latency (us)",
           [("rf avg", [(num(r, "batch_size"), num(r, "avg_us")) for r in fixed("rf")]),
            ("server_reply avg", [(num(r, "batch_size"), num(r, "avg_us")) for r in fixed("server_reply")]),
            ("rf p95", [(num(r, "batch_size"), num(r, "p95_us")) for r in fixed("rf")]),
            ("server_reply p95", [(num(r, "batch_size"), num(r, "p95_us")) for r in fixed("server_reply")])],
           logy=True)
    if b:
        best_rf = max(fixed("rf"), key=lambda r: num(r, "ops_per_s"), default=None)
        best_sr = max(fixed("server_reply"), key=lambda r: num(r, "ops_per_s"), default=None)
        txt = []
        if best_rf:
            txt.append("best rf N=%s %s" % (best_rf["batch_size"], fmt(num(best_rf, "ops_per_s"))))
        if best_sr:
            txt.append("best server_reply N=%s %s" % (best_sr["batch_size"], fmt(num(best_sr, "ops_per_s"))))
        for m, r in offs.items():
            txt.append("unbatched %s %s" % (m, fmt(num(r, "ops_per_s"))))
        rows.append(("5", "batch sweep, auto, adaptive", "Figs. 13/14", provider,
                     "1 client thread (pipelined CallAsync), 1 worker",
                     "32 B, N=%s" % ",".join(r["batch_size"] for r in fixed("rf")), "; ".join(txt), loads(b)))
        if best_rf and "rf" in offs:
            x = num(best_rf, "ops_per_s") / max(1, num(offs["rf"], "ops_per_s"))
            targets.append(("batched rf >= 10x unbatched rf throughput (issue 7)",
                            "%.1fx (N=%s %s vs %s calls/s)" % (x, best_rf["batch_size"], fmt(num(best_rf, "ops_per_s")),
                                                              fmt(num(offs["rf"], "ops_per_s"))),
                            "met" if x >= 10 else "MISSED"))
        for a in autos:
            l = num(a, "limit_us")
            ok_fixed = [r for r in fixed("rf") if num(r, "p95_us") <= l]
            best = max(ok_fixed, key=lambda r: num(r, "ops_per_s"), default=None)
            share = num(a, "ops_per_s") / num(best, "ops_per_s") if best else 0
            verdict = ("met" if num(a, "p95_us") <= l and (best is None or share >= 0.9) else "MISSED")
            targets.append(("auto l_limit=%d us: p95 <= l_limit and >= 90%% of best fixed rf meeting it (issue 7)" % l,
                            "p95 %s us, final N=%s, %s calls/s; best fixed: %s" % (
                                a["p95_us"], a["final_batch_size"], fmt(num(a, "ops_per_s")),
                                ("N=%s %s -> %.0f%%" % (best["batch_size"], fmt(num(best, "ops_per_s")), 100 * share))
                                if best else "none meets it"),
                            verdict))

    # 6. rfrpc vs gRPC.
    e6 = read_csv(os.path.join(out, "exp6_rfrpc_vs_grpc.csv"))
    if e6:
        sizes = sorted({int(num(r, "size")) for r in e6})
        s0 = str(sizes[0])
        series = []
        for sysname, tr in sorted({(r["system"], r["transport"]) for r in e6}):
            series.append(("%s %s" % (sysname, tr),
                           [(num(r, "threads"), num(r, "ops_per_s")) for r in e6
                            if r["system"] == sysname and r["transport"] == tr and r["size"] == s0]))
        P.plot("exp6_rfrpc_vs_grpc", "Exp 6: echo calls/s, rfrpc vs gRPC 1.51 sync unary, %s B" % s0,
               "client threads", "calls/s (log)", series, logy=True, extra="set xtics 1")
        def pick(system, transport, threads, size):
            for r in e6:
                if (r["system"], r["transport"], r["threads"], r["size"]) == (system, transport, str(threads), str(size)):
                    return r
            return None
        rf_tr = provider
        parts = []
        for t in (1, 2):
            rr = pick("rfrpc", rf_tr, t, s0)
            for tr in ("unix", "tcp"):
                g = pick("grpc", tr, t, s0)
                if rr and g:
                    parts.append("%d thr vs gRPC %s: %.0fx calls/s (%s vs %s), p50 %s vs %s us" % (
                        t, tr, num(rr, "ops_per_s") / max(1, num(g, "ops_per_s")), fmt(num(rr, "ops_per_s")),
                        fmt(num(g, "ops_per_s")), rr["p50_us"], g["p50_us"]))
        rows.append(("6", "echo: rfrpc (%s) vs gRPC 1.51 (Unix socket, TCP)" % rf_tr, "(issue 9 exp. 6)", provider,
                     "1, 2 clients", "%s B" % ",".join(map(str, sizes)), "; ".join(parts), loads(e6)))
        rr, g = pick("rfrpc", rf_tr, 1, s0), pick("grpc", "unix", 1, s0)
        if rr and g:
            x = num(rr, "ops_per_s") / max(1, num(g, "ops_per_s"))
            y = num(g, "p50_us") / max(1e-9, num(rr, "p50_us"))
            targets.append(("rfrpc >= 100x gRPC (Unix socket) calls/s, 1 client thread (issue 9)",
                            "%.0fx (%s vs %s calls/s, %s B; load %s)" % (x, fmt(num(rr, "ops_per_s")), fmt(num(g, "ops_per_s")), s0, loads([rr, g])),
                            "met" if x >= 100 else "MISSED"))
            targets.append(("rfrpc p50 <= 1/100 of gRPC's, 1 client thread (issue 9)",
                            "gRPC p50 / rfrpc p50 = %.0fx (%s vs %s us)" % (y, g["p50_us"], rr["p50_us"]),
                            "met" if y >= 100 else "MISSED"))

    # 7. YCSB.
    e7 = read_csv(os.path.join(out, "exp7_ycsb.csv"))
    if e7:
        keys = list(e7[0].keys())
        sysk, wlk, opsk = keys[0], keys[1], keys[3]
        P.plot("exp7_ycsb", "Exp 7: YCSB A and C, ops/s (paper record size)", "workload (0 = A, 1 = C)",
               "ops/s (log)",
               [(s, [(0 if r[wlk].strip() == "A" else 1, num(r, opsk)) for r in e7 if r[sysk] == s])
                for s in dict.fromkeys(r[sysk] for r in e7)], logy=True, extra="set xrange [-0.5:1.5]\nset xtics ('A' 0, 'C' 1)")
        rows.append(("7", "YCSB A/C: Jakiro vs memcached, Redis", "Figs. 7/8 (KV)", "shm (Jakiro); TCP loopback (peers)",
                     "see exp7_ycsb.md", "16 B keys, 32 B values",
                     "; ".join("%s %s %s ops/s" % (r[sysk], r[wlk], fmt(num(r, opsk))) for r in e7), "see exp7_ycsb.md"))
    else:
        rows.append(("7", "YCSB A/C: Jakiro vs memcached, Redis", "Figs. 7/8 (KV)", "-", "-", "-",
                     "not available yet: benchmarks/kv_compare.sh (branch jakiro) is not in this tree", "-"))

    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("# rfrpc benchmark run: %s, provider %s%s\n\n" % (meta.get("date", "?"), provider, label))
        f.write("- machine: %s CPUs (%s), shared with other work; load average at start %s, at end %s\n" % (
            meta.get("host_cpus", "?"), meta.get("cpu_model", "?"), meta.get("loadavg_start", "?"),
            meta.get("loadavg_end", "?")))
        f.write("- mode: %s; commit %s; wall time %s s\n" % (meta.get("mode", "?"), meta.get("git", "?"),
                                                           meta.get("seconds", "?")))
        if provider == "shm":
            f.write("- shm: same-host figures (the initiating CPU copies through shared memory; no NIC). "
                    "gRPC runs over the kernel's Unix socket / loopback TCP on the same host.\n")
        else:
            f.write("- **%s**: experiments 1-6 (rfrpc side) ran inside one Soft-RoCE VM boot; gRPC and "
                    "the key-value peers ran on the host. The load average of VM rows is the guest's "
                    "(2 vCPUs); the host's is in the line above.\n" % VERBS_LABEL)
        f.write("- each figure's load average column is the 1-minute load when its rows were measured "
                "(2 cores: above 2 means the benchmark shared its cores)\n\n")
        f.write("## Headline\n\n")
        f.write("| exp | what | paper figure | provider | threads | sizes | result | load avg |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for r in rows:
            f.write("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |\n")
        f.write("\n## Targets (reported, not asserted)\n\n")
        f.write("| target | measured | verdict |\n| --- | --- | --- |\n")
        for t in targets:
            f.write("| %s | %s | %s |\n" % t)
        checks = os.path.join(out, "exp5_checks.txt")
        if os.path.exists(checks):
            f.write("\nbatch_bench's own checks:\n\n```\n%s```\n" % open(checks).read())
        f.write("\n## Files\n\n")
        for name in sorted(os.listdir(out)):
            if name.endswith((".csv", ".png", ".md", ".txt")) and name != "summary.md":
                f.write("- `%s`\n" % name)
        f.write("\nHow to read each plot: benchmarks/README.md.\n")
    print("wrote %s/summary.md and %d plots" % (out, len(P.made)))


if __name__ == "__main__":
    main()
