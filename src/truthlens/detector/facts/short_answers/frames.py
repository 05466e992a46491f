"""The words that frame a short answer's one name and claim nothing of their own ("The answer is", "It was").

"The answer is Jennifer Kent." claims one thing: that Jennifer Kent is what the question asks
for. "The answer is" restates that it answers; the name is the claim, and the fact check judges
it there (a name the context gives another role is a finding on the name). The shipped model
learned from RAG answers to flag words the context does not use, and "answer" is rarely in a
context: on the one-name answers of HaluEval QA's train fold it flagged right names on the frame
alone ("The answer is Jennifer Kent." on "answer", 0.31 at a route threshold of 0.3).
:func:`frames` finds such frames so that fusion lets each weigh no more than the name it frames
(:func:`truthlens.detector.fusion.as_what_it_frames`), as a bare "Yes" weighs no more than its clause.

A frame is what a short answer (:func:`~truthlens.detector.facts.roles.is_short_answer`) writes
around its one name when every word of it is a stop word, a word naming the reply itself or
the writer's stance on it (:data:`FRAME_WORDS`): "It was Buzz Aldrin.", "The correct answer is Lyon.", "Canberra is the
answer." A negation is no frame ("It was not Buzz Aldrin."), nor is a word of the question's
focus ("The CFO is Maria Lopez."): "CEO" written for "CFO" would be the changed word.
"""

from __future__ import annotations

from collections.abc import Sequence

from truthlens.detector.facts.names import Name
from truthlens.detector.facts.roles import is_short_answer
from truthlens.detector.text import NEGATIONS, WORD, is_stop_word

# Words that name the reply or grade it, or the writer's stance on it ("I think it was ..."), not the world.
FRAME_WORDS = frozenset("answer reply response correct right final short think believe".split())

# (frame start, frame end, name start, name end), answer characters.
Frame = tuple[int, int, int, int]


def frames(answer: str, names: Sequence[Name]) -> tuple[Frame, ...]:
    """The frames around the one name of a short ``answer`` (``names``: the names read in it)."""
    if len(names) != 1 or not is_short_answer(answer):
        return ()
    name = names[0]
    out = []
    for start, end in ((0, name.start), (name.end, len(answer))):
        words = list(WORD.finditer(answer, start, end))
        if words and all(_frames(w.group(0).lower()) for w in words):
            out.append((words[0].start(), words[-1].end(), name.start, name.end))
        elif words:
            return ()  # a word that says something besides the name: not a bare name answer
    return tuple(out)


def _frames(word: str) -> bool:
    """Whether ``word`` (lower case) can frame a name: a stop word or a word of the reply, never a
    negation ("It was not Buzz Aldrin." denies what the name would claim)."""
    negated = word in NEGATIONS or word.replace("’", "'").endswith("n't")
    return not negated and (word in FRAME_WORDS or is_stop_word(word))
