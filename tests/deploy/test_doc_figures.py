"""The figures docs/detector.md quotes from the shipped model's manifest (the route threshold
table, the development figures at the default threshold: the probability map's block) are the
manifest's: each block equals ``python -m bench.doc_figures``'s rendering of the manifest as shipped."""

from __future__ import annotations

import pytest

from bench import doc_figures


@pytest.mark.parametrize("name", sorted(doc_figures.FIGURES))
def test_the_docs_figures_are_the_manifests(name: str) -> None:
    doc = doc_figures.in_doc(doc_figures.DETECTOR_DOC.read_text(encoding="utf-8"))
    assert doc[name] is not None, f"docs/detector.md has no figures:{name} block"
    assert doc[name] == doc_figures.rendered()[name], "run: python -m bench.doc_figures --write"


def test_the_threshold_table_reads_the_manifests_rows() -> None:
    row = {"ragtruth faithful flagged": 0.25, "ragtruth recall": 0.5, "halueval faithful flagged": 0.125,
           "halueval recall": 0.75}
    verdict = {"probability": {"route_thresholds": {doc_figures.DEFAULT_THRESHOLD: row}}}
    assert (f"| **{doc_figures.DEFAULT_THRESHOLD} (default)** | **25.0%** | **50.0%** | **12.5%** | **75.0%** |"
            in doc_figures.threshold_table(verdict))


def test_the_docs_example_score_is_the_shipped_detectors() -> None:
    score = doc_figures.example_score()
    found = doc_figures.example_scores_in_docs()
    assert all(found.values()), found  # each page shows the example's score
    for path, scores in found.items():
        for shown in scores:
            assert abs(shown - score) <= doc_figures.EXAMPLE_TOLERANCE, (path.name, shown, score)
