"""The detector's input prompt: LettuceDetect's English QA template, byte for byte.

The shipped model is trained on exactly this text, so serving must build it the same way;
the training recipe imports :func:`build_prompt` rather than keeping a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

TEMPLATE_NAME = "lettucedetect-qa-en"

# lettucedetect/prompts/qa_prompt_en.txt (no trailing newline); the pieces around the
# passage block are kept apart so the chunk planner can measure them.
_HEAD = (
    "Briefly answer the following question:\n{question}\n"
    "Bear in mind that your response should be strictly based on the following {num_passages} passages:\n"
)
_TAIL = (
    "\nIn case the passages do not contain the necessary information to answer the question, "
    'please reply with: "Unable to answer based on given passages."\noutput:'
)


def passage_line(index: int, passage: str) -> str:
    """One passage as the template numbers it (``index`` counts from 0)."""
    return f"passage {index + 1}: {passage}"


def build_prompt(context: Sequence[str], question: str) -> str:
    """The prompt (first segment of the pair encoding) for passages and a question."""
    block = "\n".join(passage_line(i, p) for i, p in enumerate(context))
    return prompt_head(question, len(context)) + block + _TAIL


def prompt_head(question: str, num_passages: int) -> str:
    """Everything before the first passage."""
    return _HEAD.format(question=question, num_passages=num_passages)


def prompt_tail() -> str:
    """Everything after the last passage."""
    return _TAIL
