"""The INLG 2021 accuracy shared task (Thomson & Reiter; CC0): basketball reports with marked errors.

From the GitHub repository ``ehudreiter/accuracySharedTask``: 60 game reports three neural
data-to-text systems wrote from Rotowire box scores, with every factual error marked by trained
annotators (``gsml.csv``: text id, 1-based first and last token in the space-tokenised
``GENERATED_TEXT`` of ``games.csv``, error type). ``shared_task.jsonl`` holds each game's box
score and team lines. The authors publish these 60 as the task's **training and development**
data; the 30 texts under ``test_set/`` are the task's evaluation set and are not read here.

The box score becomes the context as one line per team and per player who played (the record
a sports application would send), with the game's date. Every marked error is labelled
unsupported: the annotators checked against the box score and the game's public record, so a
few marks (the weekday, a team's next opponent) need the date or knowledge the context does not
give in full. The source document is the game.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from training.corpus.builder import Example, LabelSpan

QUESTION = "Write a report of this basketball game from its box score."
_PLAYER_STATS = ("MIN", "PTS", "REB", "OREB", "DREB", "AST", "STL", "BLK", "TO", "PF", "FGM", "FGA", "FG3M",
                 "FG3A", "FTM", "FTA")
_TEAM_STATS = ("PTS", "PTS_QTR1", "PTS_QTR2", "PTS_QTR3", "PTS_QTR4", "WINS", "LOSSES", "REB", "AST", "TOV",
               "FG_PCT", "FG3_PCT", "FT_PCT")


def box_score_text(game: dict[str, object]) -> str:
    """A game record as lines a model reads: date, both teams' lines, every player who played."""
    month, day, year = str(game["day"]).split("_")
    lines = [f"date: 20{year}-{month}-{day}"]
    for side in ("home", "vis"):
        team = game[f"{side}_line"]
        assert isinstance(team, dict)
        stats = ", ".join(f"{k} {team[f'TEAM-{k}']}" for k in _TEAM_STATS if f"TEAM-{k}" in team)
        where = "home" if side == "home" else "visitors"
        lines.append(f"{team['TEAM-CITY']} {team['TEAM-NAME']} ({where}): {stats}")
    box = game["box_score"]
    assert isinstance(box, dict)
    for idx in sorted(box["PLAYER_NAME"], key=int):
        if box["MIN"][idx] in ("N/A", "0", ""):
            continue
        stats = ", ".join(f"{k} {box[k][idx]}" for k in _PLAYER_STATS)
        role = box["START_POSITION"][idx] or "bench"
        lines.append(f"{box['PLAYER_NAME'][idx]} ({box['TEAM_CITY'][idx]}, {role}): {stats}")
    return "\n".join(lines)


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character span of each space-separated token (the task's tokenisation)."""
    spans, pos = [], 0
    for token in text.split(" "):
        spans.append((pos, pos + len(token)))
        pos += len(token) + 1
    return spans


def document_key(text_id: str) -> str:
    return f"rotowire/{text_id}"


def load(root: Path) -> Iterator[tuple[str, Example]]:
    """``(document key, example)`` for each training text that has its box score."""
    games: dict[str, dict[str, object]] = {}
    with (root / "shared_task.jsonl").open(encoding="utf-8") as f:
        for line in f:
            game = json.loads(line)
            games[str(game["shared_task_text_id"])] = game
    errors: dict[str, list[tuple[int, int]]] = defaultdict(list)
    with (root / "gsml.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            errors[row["TEXT_ID"].removesuffix(".txt")].append((int(row["DOC_TOKEN_START"]), int(row["DOC_TOKEN_END"])))
    with (root / "games.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            text_id, answer = row["TEXT_ID"], row["GENERATED_TEXT"]
            if text_id not in games:
                continue
            tokens = token_spans(answer)
            marked = errors[text_id]
            labels = sorted({(tokens[a - 1][0], tokens[b - 1][1]) for a, b in marked if 1 <= a <= b <= len(tokens)})
            yield document_key(text_id), Example(
                id=f"rotowire-{text_id}",
                split="train",
                domain="rotowire_accuracy",
                context=(box_score_text(games[text_id]),),
                question=QUESTION,
                answer=answer,
                labels=tuple(LabelSpan(s, e, "unsupported") for s, e in labels),
            )
