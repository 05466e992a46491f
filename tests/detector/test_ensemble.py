"""An ensemble model directory: members scored in their own tokenizers, joined per character.

Real parts: two hand-weighted lookup graphs (``conftest.py``) run by real ONNX Runtime, one over
the MiniLM tokenizer and one over a WordPiece tokenizer trained here on a few sentences, so the
two models cut the same answer into different tokens. Nothing is scripted.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

from truthlens.detector.backends.factory import create_detector
from truthlens.detector.encoding import TextEncoder
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.export.triton_repo import write_triton_repo
from truthlens.detector.manifest import DEFAULT_MODEL_DIR, ModelDirError, load_manifest, load_members
from truthlens.detector.scoring.ensemble import joined, project
from truthlens.detector.scoring.token_scorer import TokenScores
from truthlens.detector.types import DetectionInput, DetectorSettings, RemoteSettings

from .conftest import write_lookup_model

CONTEXT = ("The museum in Paris opened in 1889 and the harbour was rebuilt in 1925.",)
ANSWER = "The museum opened in Lyon and the harbour was rebuilt in Berlin."
# A small vocabulary: "lyon" is a word of it, "berlin" is not and falls apart into pieces.
_CORPUS = ("the museum opened in paris and lyon and the harbour was rebuilt in the year . "
           "ber lin berl b e r i l n . ") * 3


def _small_tokenizer(path: Path) -> Path:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tok.train_from_iterator([_CORPUS], trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def _with_manifest(directory: Path, **fields: object) -> Path:
    raw = json.loads((directory / "manifest.json").read_text())
    raw.update(fields)
    (directory / "manifest.json").write_text(json.dumps(raw))
    return directory


@pytest.fixture
def ensemble_dir(tmp_path: Path, tokenizer_file: Path) -> Path:
    """This directory's model (MiniLM tokens) flags "Lyon"; its member (small WordPiece) flags "Berlin"."""
    small = _small_tokenizer(tmp_path / "small-tokenizer.json")
    write_lookup_model(tmp_path / "ensemble" / "member", small, flagged=("berlin",))
    own = write_lookup_model(tmp_path / "ensemble", tokenizer_file, flagged=("lyon",))
    return _with_manifest(own, ensemble=["member"], calibration={"token_threshold": 0.4, "aggregation": "max_span"})


def _detector(model_dir: Path) -> DetectorEngine:
    detector = create_detector(DetectorSettings(model_dir=str(model_dir), provider="cpu", intra_op_threads=1))
    assert isinstance(detector, DetectorEngine)
    return detector


def _chars(scores: TokenScores, word: str) -> np.ndarray:
    """The probabilities of the tokens inside ``word``'s characters in ANSWER."""
    start = ANSWER.index(word)
    inside = (scores.offsets[:, 0] >= start) & (scores.offsets[:, 1] <= start + len(word))
    return scores.probs[inside]


async def test_each_word_carries_the_mean_of_both_models(ensemble_dir: Path) -> None:
    member_tokens = TextEncoder(ensemble_dir / "member" / "tokenizer.json").encode("Berlin")
    own_tokens = TextEncoder(ensemble_dir / "tokenizer.json").encode("Berlin")
    assert len(member_tokens) > 1 and len(own_tokens) == 1  # the member reads "Berlin" in pieces

    alone = _detector(_with_manifest(ensemble_dir, ensemble=[]))  # its own model only
    lyon_alone = await alone.token_scores(DetectionInput(CONTEXT, "What happened?", ANSWER))
    await alone.close()
    ensemble = _detector(_with_manifest(ensemble_dir, ensemble=["member"]))
    scores = await ensemble.token_scores(DetectionInput(CONTEXT, "What happened?", ANSWER))

    flagged, clean = float(lyon_alone.probs.max()), float(lyon_alone.probs.min())
    assert flagged > 0.9 and clean < 0.1
    # Each model flags its own word; the other model's clean probability halves it.
    assert _chars(scores, "Lyon") == pytest.approx([(flagged + clean) / 2], abs=1e-5)
    assert _chars(scores, "Berlin") == pytest.approx([(flagged + clean) / 2], abs=1e-5)
    assert _chars(scores, "museum") == pytest.approx([clean], abs=1e-5)
    # Each model runs the rows its own model alone runs ("What happened?" asks for the whole
    # passage: a summary, scored under its two wordings), no more.
    assert scores.rows == 2 * lyon_alone.rows

    # Both words clear the ensemble's calibrated threshold (0.4) and are shown as spans.
    result = await ensemble.detect(DetectionInput(CONTEXT, "What happened?", ANSWER), threshold=0.3)
    assert result.detected and [s.text for s in result.spans] == ["Lyon", "Berlin"]
    assert ensemble.queue_depth == 0
    await ensemble.close()


def test_members_resolve_beside_the_manifest_and_builtin_is_the_shipped_model(ensemble_dir: Path) -> None:
    manifest = load_manifest(_with_manifest(ensemble_dir, ensemble=["member", "builtin"]))
    assert manifest.ensemble == (ensemble_dir / "member", DEFAULT_MODEL_DIR)
    assert load_manifest(ensemble_dir / "member").ensemble == ()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ("member", "'ensemble' must list model directories"),
        ([""], "'ensemble' must list model directories"),
        (["absent"], "does not exist"),
    ],
)
def test_a_bad_member_list_is_named(ensemble_dir: Path, members: object, message: str) -> None:
    with pytest.raises(ModelDirError, match=message):
        manifest = load_manifest(_with_manifest(ensemble_dir, ensemble=members))
        load_members(manifest)


def test_a_member_that_is_an_ensemble_or_has_other_labels_is_refused(ensemble_dir: Path) -> None:
    _with_manifest(ensemble_dir / "member", ensemble=[".."])
    with pytest.raises(ModelDirError, match="is an ensemble itself"):
        load_members(load_manifest(ensemble_dir))
    _with_manifest(ensemble_dir / "member", ensemble=[], labels=["ok", "made_up"])
    with pytest.raises(ModelDirError, match="has other labels"):
        load_members(load_manifest(ensemble_dir))


def test_remote_serving_and_triton_refuse_an_ensemble(ensemble_dir: Path, tmp_path: Path) -> None:
    # One remote model answers each row; the members would need their own servers.
    settings = DetectorSettings(backend="remote", model_dir=str(ensemble_dir), remote=RemoteSettings())
    with pytest.raises(ModelDirError, match="runs on the 'onnx' backend only"):
        create_detector(settings)
    with pytest.raises(ModelDirError, match="runs on the 'onnx' backend only"):
        write_triton_repo(str(ensemble_dir), tmp_path / "repo")


def test_projection_takes_the_highest_piece_and_leaves_uncovered_tokens_alone() -> None:
    # "Paris is big": own tokens Paris / is / big; the member cut "Paris" into "Par" + "is".
    own = np.array([[0, 5], [6, 8], [9, 12]])
    member = np.array([[0, 3], [3, 5], [6, 8]])  # nothing covers "big"
    assert project(member, np.array([0.1, 0.9, 0.2]), own).tolist() == pytest.approx([0.9, 0.2, -1.0])
    scores = joined(
        TokenScores(np.zeros(3), own, np.array([0.5, 0.0, 0.2], dtype=np.float32), 1),
        [TokenScores(np.zeros(3), member, np.array([0.1, 0.9, 0.2], dtype=np.float32), 1)],
    )
    assert scores.probs.tolist() == pytest.approx([0.7, 0.1, 0.2])  # "big" keeps its own 0.2
    assert scores.rows == 2
    empty = TokenScores(np.zeros(0), np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.float32), 0)
    assert joined(empty, [scores]) is empty  # an empty answer stays empty
