"""What a request asks of its context: a ``question`` (something in it), the ``whole`` (a summary,
an overview, a description of all of it) or something no context can ground (``ungroundable``:
an opinion, an assessment, a translation, a creative piece, a rewrite for another reader or in
another style).

The reading follows the request's grammar, not a list of the words a benchmark's instructions
happen to use. In order:

1. **Ungroundable**: as the request's verb (after any courtesy: "please", "could you"), a
   translation (``translat…``), a creative form (a making verb — write, compose, turn into, tell,
   make — with a poem, song, story, joke, dialogue, tweet, …), a rewrite (rewrite, rephrase,
   paraphrase, reword; "make it funnier", "make this sound more …", "say it in the style of") or
   an assessment (rate, grade, critique, judge, assess, evaluate); anywhere, the assistant's own
   view (what do you think, your opinion / take / view, do you agree, would you recommend,
   should I), another reader ("like I'm five", "like a pirate") or an assessment of the text
   itself ("is this … biased / fair / good / convincing …", "how well written is this", "how
   would you improve"). A question that only mentions one ("Who translated the novel?", "Who
   wrote the song?") asks for a fact.
2. **The whole**, asked about: "what is it about", "what does the article say / cover", "what
   happened", "what is this" over the context itself.
3. **The whole**, asked for: a summary's genre word (summary, recap, TL;DR, synopsis, overview,
   outline, abstract, gist, rundown, digest, highlights, main or key points, description,
   profile, bio, a paragraph or prose made of it, in plain language; sum up, boil down, condense,
   shorten, describe)
   and no clause that asks something of its own (who, what, when, where, which, why, how,
   whether): "Summarise how the council voted" is a question.
4. **A question**: a question mark, a wh-word, an opening auxiliary ("Is it open on Sundays"), or
   an imperative that asks for an item (give, tell, list, name, find, show, identify, state,
   compare, look up, explain; "I need …", "I'd like to know …"), after any courtesy ("please",
   "could you").
5. Else (a label such as "Data-to-text:", a verb with no question, nothing at all): **the whole**,
   unless the request names something the context holds (a keyword query: "tram line cost").

A conversation ("[Human]: … [Assistant]: …") is a question: its last turn asks about what the
dialogue is on. A capitalised word inside a sentence is a name, not a genre ("Reader's Digest").

Validated on a held-out set of wordings written before this rule and never changed after it
(``tests/fixtures/reading/wordings_heldout.json``; ``python -m bench.request_reading``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from truthlens.detector.text import terms

Asks = Literal["question", "whole", "ungroundable"]

_CREATIVE_FORMS = (r"poems?|haikus?|limericks?|sonnets?|songs?|lyrics|raps?|(?:short )?stor(?:y|ies)|fables?|jokes?"
                   r"|dialogues?|screenplays?|scripts?|tweets?|tweet threads?|slogans?|riddles?|ballads?|essays?")
# Asked of the assistant, wherever it stands in the request.
_UNGROUNDABLE = re.compile(
    # the assistant's own view
    # ("you" in lower case: "Do You Believe?" is a film's title)
    r"\bwhat do (?-i:you) (?:think|make of|feel)\b|\byour (?:\w+ )?(?:opinion|take|view|views|thoughts|verdict)\b"
    r"|\bdo (?-i:you) (?:agree|like|think|believe)\b|\bwould (?-i:you) (?:recommend|buy|trust|choose)\b"
    r"|\bshould i\b"
    # for another reader or in another style
    r"|\blike (?:i'm|i am|i was|you're talking to)\b|\blike an? (?:pirate|child|kid)\b|\beli5\b"
    # an assessment of the text itself
    r"|\b(?:is|are|was) (?:this|it|that|these|the (?-i:[a-z]\w*))(?: \w+)? (?:biased|fair|good|bad|convincing"
    r"|persuasive|reliable|trustworthy|credible|well[- ]written|worth \w+|any good|balanced|objective|misleading)\b"
    r"|\bhow (?:well|good|bad|convincing|persuasive)(?: \w+)? (?:is|are|was) (?:this|it|that|these)\b"
    r"|\bhow would you (?:improve|rate|rewrite|change)\b",
    re.IGNORECASE,
)
# Asked as the request's verb (after any courtesy): a question that mentions a translation or a
# song ("Who wrote the song?", "a song translated into how many languages?") asks for a fact.
_UNGROUNDABLE_VERB = re.compile(
    r"(?:translat\w*"
    rf"|(?:write|compose|turn|make|create|tell|draft|generate|come up with)\b"
    rf"(?:(?!\b(?:of|about|from|on|in|for)\b)[^.?!\n]){{0,40}}\b(?:{_CREATIVE_FORMS})\b"
    r"|(?:rewrite|re-write|rephrase|paraphrase|reword|restyle)\w*"
    r"|make (?:it|this|that|the \w+(?: \w+)?) (?:sound |more |less |(?!shorter\b|briefer\b)\w+er\b)"
    r"|(?:say|write|explain|tell|put) (?:it|this|that)?\s*(?:in the (?:style|voice|tone) of|as if)\b"
    r"|(?:rate|grade|critique|judge|assess|evaluate|review|score)\b)",
    re.IGNORECASE,
)
# "the" + a common noun ("the article"), never a title ("What's The Naked Sun about?").
_THE_TEXT = r"(?:this|it|the (?-i:[a-z]\w*))"
_ABOUT_THE_WHOLE = re.compile(
    rf"\bwhat(?:'s| is| was| are)? {_THE_TEXT}(?: (?-i:[a-z]\w*))? (?:all )?about\b"
    r"|\bwhat does (?:it|(?:this|that|the)(?: (?-i:[a-z]\w*)){0,2}) (?:say|cover|tell us|tell me|describe|discuss"
    r"|mean)\b"
    r"|\bwhat (?:it|(?:this|that|the)(?: (?-i:[a-z]\w*)){0,2}) (?:says|covers|describes|discusses|means|is about)\b"
    r"|^\W*what happened\W*$",
    re.IGNORECASE,
)
_WHOLE_GENRE = re.compile(
    r"\w*summar\w*|\brecap\w*|\btl\s*;?\s*dr\b|\btldr\b|\bsynops[ie]s\b|\boverview\b|\boutline\b|\babstract\b"
    r"|\bgist\b|\brundown\b|\bdigest\b|\bhighlights?\b|\b(?:main|key|important) (?:points?|findings|facts|ideas"
    r"|takeaways?|details)\b|\bdescri(?:be|bing|ption)\b|\bprofile\b|\bbio\b|\bparagraph\b|\bprose\b|\bprécis\b"
    r"|\bsum (?:it |this |that |them )?up\b|\bboil (?:it |this |that )?down\b|\bcondens\w*|\bshorten\w*"
    r"|\bin (?:a )?(?:nutshell|brief)\b|\bbrief\b|\bin plain (?:language|english|words|terms)\b|\bsimply\b",
    re.IGNORECASE,
)
# A speaker's turn ("[Human]:", "User:", "Assistant:"): the request is a conversation.
_SPEAKER = re.compile(r"\[(?:human|user|assistant|system)\]\s*:|(?:^|\n)\s*(?:user|assistant|human)\s*:", re.I)
_WH_CLAUSE = re.compile(r"\b(?:who|whom|whose|what|when|where|which|why|how|whether)\b\s+\w+", re.IGNORECASE)
_INTERROGATIVE = re.compile(
    r"\?|\b(?:who|what|when|where|which|why|how|whose|whom|whether)\b|"
    r"(?:^|[.!:;\n]\s*)(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b",
    re.IGNORECASE,
)
_COURTESY = re.compile(r"^(?:(?:please|pls|plz|kindly|hi|hello|hey|ok|okay|so)[\s,!:]+|(?:can|could|would|will) you"
                       r"(?: please| kindly)?\s+|quick (?:q|question)\s*:\s*)+", re.IGNORECASE)
_ASK_FOR_ITEM = re.compile(
    r"^(?:give|tell|list|name|find|show|identify|state|compare|look up|explain|get|fetch|check|confirm|count)\b"
    r"|^i(?:'d| would)? (?:need|want|like|wonder|am wondering|'m wondering)\b",
    re.IGNORECASE,
)
def what_it_asks(request: str, context: Sequence[str] = ()) -> Asks:
    """What ``request`` asks of ``context`` (module docstring)."""
    text = " ".join(request.split())
    if not text:
        return "whole"
    if _SPEAKER.search(text):  # a conversation: its last turn asks about what the dialogue is on
        return "question"
    if _UNGROUNDABLE.search(text) or _UNGROUNDABLE_VERB.match(_COURTESY.sub("", text)):
        return "ungroundable"
    if names_the_whole(text):
        return "whole"
    if asks_something(text):
        return "question"
    return "question" if names_content(text, context) else "whole"


def asks_something(request: str) -> bool:
    """A question mark, a wh-word, an opening auxiliary, or an imperative that asks for an item
    (step 4 of the module docstring)."""
    text = " ".join(request.split())
    return _INTERROGATIVE.search(text) is not None or _ASK_FOR_ITEM.search(_COURTESY.sub("", text)) is not None


def names_the_whole(request: str) -> bool:
    """Whether ``request`` asks about or for the whole by name (steps 2 and 3 of the module
    docstring), as opposed to a request that asks nothing in particular."""
    text = " ".join(request.split())
    if _ABOUT_THE_WHOLE.search(text):
        return True
    genre = [m for m in _WHOLE_GENRE.finditer(text) if not _is_a_name(text, m.start())]
    return bool(genre) and not _WH_CLAUSE.search(_COURTESY.sub("", text))


def _is_a_name(text: str, at: int) -> bool:
    """A capitalised word inside a sentence is a name ("Reader's Digest", "The Summary Show"),
    not a request for a digest or a summary."""
    return text[at].isupper() and not text[at + 1:at + 2].isupper() and at > 0 \
        and text[:at].rstrip()[-1:] not in ".!?:;"


def names_content(request: str, context: Sequence[str]) -> bool:
    """Whether ``request`` names something ``context`` holds: a word of it (not a function word)
    that the context uses too."""
    asked = _words(request)
    return bool(asked) and not asked.isdisjoint(_words(" ".join(context)))


def _words(text: str) -> set[str]:
    """What ``text`` names: its content words (stems, three letters or more) and its numbers."""
    return {t for t in terms(text) if len(t) > 2 or t[0].isdigit()}
