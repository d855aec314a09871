#!/usr/bin/env python3
"""Offline comparison of a `gpuws bench --json` result with a `run_peers.py` JSON taken on the same machine.

    python3 bench/peers/compare.py <gpuws>.json <peers>.json [--markdown]

Rows are matched by (algorithm, variant, size class). For each gpuws target the table gives the gpuws median, the
peer's median and peer/gpuws (> 1: gpuws is faster). FAILED rows are shown as such, never compared.
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gpuws")
    ap.add_argument("peers")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args()
    g, p = load(args.gpuws), load(args.peers)
    peers = {}
    for r in p["rows"]:
        if r.get("status") == "ok":
            peers[(r["algorithm"], r["variant"], r.get("size_class", p.get("size_class")))] = r
    out = []
    head = ["workload", "size", "target", "gpuws ms", "peer", "peer ms", "peer / gpuws"]
    for r in g["rows"]:
        key = (r["algorithm"], r["variant"], r.get("size_class"))
        peer = peers.get(key)
        target = r["target"]
        if r["status"] != "ok":
            out.append([f'{r["algorithm"]} {r["variant"]}', r.get("size") or "", target, "FAILED", "", "", ""])
            continue
        if not peer:
            out.append([f'{r["algorithm"]} {r["variant"]}', r["size"], target, f'{r["median_ms"]:.4g}', "-", "", ""])
            continue
        out.append([f'{r["algorithm"]} {r["variant"]}', r["size"], target, f'{r["median_ms"]:.4g}', peer["backend"],
                    f'{peer["median_ms"]:.4g}', f'{peer["median_ms"] / r["median_ms"]:.3g}x'])
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in out:
            print("| " + " | ".join(row) + " |")
    else:
        w = [max(len(str(x[i])) for x in out + [head]) for i in range(len(head))]
        for row in [head] + out:
            print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(row)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
