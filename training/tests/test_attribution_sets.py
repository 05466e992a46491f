"""WiCE and AttributionBench converters, and the continuation corpus that joins them to a replayed mix.

Real parts: the loaders, the overlap screen and ``python -m training.corpus.continued`` run as in
the recipe; the inputs are a few rows written here in each repository's own file layout (WiCE's
``non_supported_tokens`` and ``entailment_retrieval/claim`` JSONL, AttributionBench's dev JSONL),
copied in shape from the published files. No network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from training.corpus import attributionbench, continued, human_sets, sources, wice
from training.corpus.builder import Example, LabelSpan
from training.corpus.splits import read_jsonl, write_jsonl

PAGE = [
    "(meta data) TITLE: Irene Hervey - obituary",
    "Irene Hervey, an actress who appeared in more than 50 films, died on December 20, 1998.",
    "She was born in Los Angeles in 1909.",
]


def _wice_clone(root: Path) -> None:
    tokens = root / wice.TOKENS
    tokens.mkdir(parents=True)
    claim = "Irene Hervey appeared in over fifty films and numerous television series."
    row: dict[str, Any] = {
        "claim": claim,
        "claim_tokens": ["Irene", "Hervey", "appeared", "in", "over", "fifty", "films", "and", "numerous",
                         "television", "series", "."],
        "non_supported_spans": [False] * 8 + [True, True, True, False],
        "label": "partially_supported", "supporting_sentences": [[1]], "evidence": PAGE,
        "meta": {"id": "train00561-1", "claim_title": "Irene Hervey", "claim_section": "Abstract.",
                 "claim_context": " "},
    }
    (tokens / "train.jsonl").write_text(json.dumps(row) + "\n")
    (tokens / "dev.jsonl").write_text("")
    test = dict(row, meta=dict(row["meta"], id="test00001-0"))
    (tokens / "test.jsonl").write_text(json.dumps(test) + "\n")  # WiCE's test split: must not be read
    claims = root / wice.CLAIMS
    claims.mkdir(parents=True)
    supported = {"label": "supported", "supporting_sentences": [[2]], "claim": "Hervey was born in 1909.",
                 "evidence": PAGE, "meta": {"id": "dev00007", "claim_title": "Irene Hervey"}}
    unlabelled = dict(supported, label="not_supported", claim="Hervey was born in Ohio.",
                      meta={"id": "dev00008", "claim_title": "Irene Hervey"})
    (claims / "dev.jsonl").write_text(json.dumps(supported) + "\n" + json.dumps(unlabelled) + "\n")


def test_wice_labels_the_flagged_tokens_characters_and_keeps_supported_claims_faithful(tmp_path: Path) -> None:
    _wice_clone(tmp_path)
    loaded = list(wice.load(tmp_path))
    assert [key for key, _ in loaded] == ["wice/train00561", "wice/dev00007"]
    partial, faithful = (example for _, example in loaded)
    assert [partial.answer[s.start : s.end] for s in partial.labels] == ["numerous television series"]
    assert partial.context == ("\n".join(PAGE[1:]),)  # the crawler's meta lines dropped
    assert partial.question == "Tell me about Irene Hervey."
    assert faithful.answer == "Hervey was born in 1909." and faithful.labels == ()


def test_wice_token_spans_join_adjacent_tokens_and_stop_at_a_token_the_claim_lacks() -> None:
    claim = "The audience consists of Australian ex-pats."
    tokens = ["The", "audience", "consists", "of", "Australian", "ex", "-", "pats", "."]
    flags = [False, False, False, False, True, True, True, True, False]
    assert [claim[s:e] for s, e in wice.token_spans(claim, tokens, flags)] == ["Australian ex-pats"]
    assert wice.token_spans("A b.", ["A", "``", "b"], [True, False, True]) == [(0, 1)]


def _attributionbench_clone(root: Path) -> None:
    data = root / "data"
    data.mkdir(parents=True)
    ref = "Title: Baby (song)\n\n\"Baby\" is a song by Canadian singer Justin Bieber, alongside rapper Ludacris."
    rows = [
        {"question": "who sings the rap in baby", "claim": "Ludacris sings the rap in 'Baby'.", "references": [ref],
         "attribution_label": "attributable", "src_dataset": "AttributedQA", "id": "a1"},
        {"question": "who sings the rap in baby", "claim": "Drake sings the rap in 'Baby' [1].",
         "references": [ref], "attribution_label": "not attributable", "src_dataset": "AttributedQA", "id": "a2"},
        {"question": "who wrote baby", "claim": "Justin Bieber is a singer alongside Ludacris.", "references": [ref],
         "attribution_label": "not attributable", "src_dataset": "ExpertQA", "id": "a3"},
        {"question": "q", "claim": "c", "references": ["r"], "attribution_label": "attributable",
         "src_dataset": "LFQA", "id": "a4"},
        {"question": "q", "claim": "c", "references": ["r"], "attribution_label": "attributable",
         "src_dataset": "BEGIN", "id": "a5"},
    ]
    (data / attributionbench.DEV.name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_attributionbench_labels_new_words_or_the_whole_claim_never_citations(tmp_path: Path) -> None:
    _attributionbench_clone(tmp_path)
    loaded = dict((e.id, (key, e)) for key, e in attributionbench.load(tmp_path))
    assert sorted(loaded) == ["attributionbench-a1", "attributionbench-a2", "attributionbench-a3"]  # no LFQA, BEGIN
    key, faithful = loaded["attributionbench-a1"]
    assert key == "attributionbench/who sings the rap in baby" and faithful.labels == ()
    _, new_name = loaded["attributionbench-a2"]
    assert [new_name.answer[s.start : s.end] for s in new_name.labels] == ["Drake"]
    _, same_words = loaded["attributionbench-a3"]  # every word is in the reference: the claim from end to end
    assert [same_words.answer[s.start : s.end] for s in same_words.labels] == [
        "Justin Bieber is a singer alongside Ludacris"]


def test_attributionbench_refuses_its_test_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="evaluation set"):
        list(attributionbench.load(tmp_path, Path("data/test_ood_all_subset_balanced.jsonl")))


def _eval_data(root: Path, text: str) -> Path:
    eval_data = root / "FaithJudge" / "eval_data"
    eval_data.mkdir(parents=True)
    for name in ("ragtruth_qa.jsonl", "ragtruth_data2txt.jsonl", "faithbench_summary.jsonl"):
        (eval_data / name).write_text(json.dumps({"source_id": 2, "source": "unrelated words only"}) + "\n")
    (eval_data / "ragtruth_summary.jsonl").write_text(json.dumps({"source_id": 4, "source": text}) + "\n")
    return eval_data


def test_a_wice_page_an_evaluation_source_holds_is_removed(tmp_path: Path) -> None:
    _wice_clone(tmp_path / "wice")
    index = sources.load_evaluation_sources(_eval_data(tmp_path, " ".join(PAGE[1:])))
    (parts,) = human_sets.load_all(index, wice_root=tmp_path / "wice")
    assert parts.removed_examples == 2 and parts.train == [] and parts.dev == []


def test_continued_corpus_joins_new_train_parts_extra_examples_and_a_replay_sample(tmp_path: Path) -> None:
    _wice_clone(tmp_path / "wice")
    _attributionbench_clone(tmp_path / "ab")
    _eval_data(tmp_path, "nothing the sets share")
    mix = tmp_path / "mix"
    old = [Example(f"old-{i}", "train", "ragtruth_qa", ("p",), "q", "a", ()) for i in range(10)]
    write_jsonl(iter(old), mix / "train.jsonl")
    (mix / "dev.jsonl").write_text("dev rows\n")
    extra = tmp_path / "mixups.jsonl"
    write_jsonl(iter([Example("mixup-0", "train", "mixup", ("p",), "q", "a b", (LabelSpan(0, 1, "entity"),))]), extra)
    out = tmp_path / "out"
    assert continued.main(["--mix", str(mix), "--replay", "4", "--faithjudge", str(tmp_path / "FaithJudge"),
                           "--wice", str(tmp_path / "wice"), "--attributionbench", str(tmp_path / "ab"),
                           "--extra", str(extra), "--out", str(out)]) == 0
    train = read_jsonl(out / "train.jsonl")
    domains = sorted(e.domain for e in train)
    wice_train = [e for _, e in wice.load(tmp_path / "wice") if sources.part_of(_key(e)) == "train"]
    ab_train = [e for k, e in attributionbench.load(tmp_path / "ab") if sources.part_of(k) == "train"]
    assert domains.count("ragtruth_qa") == 4 and domains.count("mixup") == 1
    assert domains.count("wice") == len(wice_train) and domains.count("attributionbench") == len(ab_train)
    assert (out / "dev.jsonl").read_text() == "dev rows\n"  # the old mix's dev parts, unchanged
    assert (out / "dev_wice.jsonl").exists() and (out / "dev_attributionbench.jsonl").exists()
    summary = json.loads((out / "mix.json").read_text())
    assert summary["human_sets"]["wice"]["train"] + summary["human_sets"]["wice"]["dev"] == 2


def _key(example: Example) -> str:
    return wice.document_key(example.id.removeprefix("wice-"))


def test_continued_corpus_refuses_extra_examples_outside_a_train_part(tmp_path: Path) -> None:
    _eval_data(tmp_path, "x")
    mix = tmp_path / "mix"
    write_jsonl(iter([Example("old", "train", "d", ("p",), "q", "a", ())]), mix / "train.jsonl")
    extra = tmp_path / "extra.jsonl"
    write_jsonl(iter([Example("leak", "dev", "mixup", ("p",), "q", "a", ())]), extra)
    with pytest.raises(SystemExit):
        continued.main(["--mix", str(mix), "--faithjudge", str(tmp_path / "FaithJudge"), "--extra", str(extra),
                        "--out", str(tmp_path / "out")])
