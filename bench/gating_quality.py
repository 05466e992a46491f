"""Which relevance score should gate evidence? Pooled cosine vs AMAR's token-level max-sim.

For each probe question: its answering passage, its same-subject distractor, and every other
question's passages. Prints, side by side: mean score per kind, ROC-AUC (answering vs all
others; vs the hard distractor only), the gate g at the shipped calibration, and scoring cost.

    python -m bench.gating_quality
"""

from __future__ import annotations

import time

import numpy as np

from bench.gating_data import PROBES
from truthlens.evidence.embedder import OnnxEmbedder
from truthlens.evidence.gating import GATE_CENTER, GATE_SCALE, gate_value


def _auc(pos: list[float], neg: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def main() -> None:
    embedder = OnnxEmbedder.load()
    questions = [q for q, _, _ in PROBES]
    passages = [p for _, good, bad in PROBES for p in (good, bad)]

    t0 = time.perf_counter()
    qv = embedder.embed_sync(questions)
    pv = embedder.embed_sync(passages)
    pooled = qv @ pv.T
    pooled_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    qt = embedder.token_embeddings_sync(questions)
    pt = embedder.token_embeddings_sync(passages)
    token = np.array([[float((q @ p.T).max(axis=1).mean()) for p in pt] for q in qt])
    token_s = time.perf_counter() - t0

    print(f"{len(questions)} questions x {len(passages)} passages; gate g = sigmoid({GATE_SCALE}*(s-{GATE_CENTER}))")
    print(f"{'score':<8}{'answer':>9}{'hard':>9}{'easy':>9}{'AUC all':>10}{'AUC hard':>10}{'ms':>9}")
    for name, sims, secs in (("pooled", pooled, pooled_s), ("token", token, token_s)):
        good, hard, easy = [], [], []
        for i in range(len(questions)):
            for j in range(len(passages)):
                (good if j == 2 * i else hard if j == 2 * i + 1 else easy).append(float(sims[i, j]))
        print(f"{name:<8}{np.mean(good):>9.3f}{np.mean(hard):>9.3f}{np.mean(easy):>9.3f}"
              f"{_auc(good, hard + easy):>10.3f}{_auc(good, hard):>10.3f}{secs * 1000:>9.0f}")
    gates_good = [gate_value(float(pooled[i, 2 * i])) for i in range(len(questions))]
    gates_hard = [gate_value(float(pooled[i, 2 * i + 1])) for i in range(len(questions))]
    gates_easy = [gate_value(float(pooled[i, j])) for i in range(len(questions))
                  for j in range(len(passages)) if j // 2 != i]
    print(f"pooled gate g: answer min {min(gates_good):.3f} mean {np.mean(gates_good):.3f}; "
          f"hard mean {np.mean(gates_hard):.3f}; easy max {max(gates_easy):.3f} mean {np.mean(gates_easy):.3f}")
    for cut in (0.3, 0.5, 0.7):
        kept_good = sum(g >= cut for g in gates_good) / len(gates_good)
        kept_easy = sum(g >= cut for g in gates_easy) / len(gates_easy)
        kept_hard = sum(g >= cut for g in gates_hard) / len(gates_hard)
        print(
            f"min_gate {cut}: keeps {kept_good:.0%} answering, {kept_hard:.0%} hard, {kept_easy:.0%} easy distractors"
        )


if __name__ == "__main__":
    main()
