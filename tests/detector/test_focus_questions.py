"""facts/focus.py and facts/bridges.py on question shapes the focus rules read since the one-name
bench's tuning half (contexts and questions written for these tests, with other names and wording
than the bench's; each wrong answer below passed the fact check before its rule):

- "Who's" / "What's" read as "Who is" / "What is";
- a wh-word standing where the name asked for goes ("... appointed who as the chief judge?");
- a question asking for the name the hop is *not* said of ("with which other person", "Apart
  from ...", "co-wrote ... with the singer ...") answered by the name it is said of;
- a title of address inside a list ("Ruth Amsel and Sir Colin Vane") and sentences glued after a
  numeral ("... King Edward VII.Colin Vane ...");
- an answer the context calls part of what is asked ("a fictional sprinter") where it calls
  another name all of it ("the real-life sprinter");
- roles joined before one agent ("directed and co-written by"), and no modifiers read before a
  verb head ("a film directed by who");
- the question's own subject under another of its names ("Maria Ofelia Lenz" / "Maria Lenz";
  "Carol Wynn (born Carla Mertz"); a capitalised common word closing a name ("Aldo Brent Still").
"""

from __future__ import annotations

import pytest

from truthlens.detector.facts import unsupported_facts
from truthlens.detector.facts.questions import question_focus, question_head

COUPLE = ("Lantern Tales is a children's book series written by Oda Brenner. Oda Brenner and her husband "
          "Paul Hesketh live in Bergen.")
COURT = ("Mara Lind is a clerk at the Northern Appeals Court, appointed by Governor Teodor Sandvik in 2015. "
         "Teodor Sandvik (born 1950) is a Norwegian lawyer who served as the chief judge of Tromso from 2001 to 2009.")
CABINET = ("The ministry was led by Ruth Amsel and Sir Colin Vane, who were chosen by King Edward VII.Ruth Amsel "
           "(1870 - 1931) was a Welsh reformer who served as Chancellor of the Exchequer from 1905 to 1908.")
SONG = ('"Paper Boats" is a song written by Ivo Marsh and Lena Kroft. Lena Kroft (born 1961) is a Dutch singer '
        "and painter, married to the actor Rob Haas.")
WRITER = ("Rolf Amsel is best known for co-writing songs for Mia Berg, Tom Aalto and Lena Kroft. Lena Kroft "
          "(born 1961) is a Dutch singer, songwriter and painter.")
SENATE = ("The bill is often called the Lenz Act after its sponsor, Senator Maria Lenz (D - VT). Maria Ofelia "
          "Lenz (1931 - 2010) was a United States Senator from Vermont.")
SITCOM = ('Edna Pike is a character on the sitcom "Harbor Lane", played by Carol Wynn. Her cousin was Ruth Pike '
          "(Dana Shore), a neighbour. Carol Wynn (born Carla Mertz; 1920 - 2001) was an American actress.")
OPERA = ("The Delta Opera is an opera company in Memphis. Composer Aldo Brent Still and soprano Nina Vale both sang "
         "with the company. Aldo Brent Still (May 1, 1890 - June 2, 1970) was an American composer.")
MOVIE = ('"Glass Hour" is a song by the band Northline. The song was featured in a trailer for "Low Tide".Low Tide '
         "is a 2016 drama film directed by and written by Ines Marr, based on a novel by author Karl Dunn.")
HORROR = ("The Hollow is a 2012 horror film directed and co-written by Emil Roth, starring Vera Lunde and Otto Sand. "
          "Vera Lunde (born 1960) is an actress who trained at a drama school in Oslo.")
RACE = ("Dan Okoro is best known for portraying fictional sprinter Kid Flash in the film Track Nine, which "
        "co-stars the real-life sprinter Abel Mensah as a coach.")


@pytest.mark.parametrize(("question", "focus"), [
    ("Who's the husband of the writer of Lantern Tales?", {"husband"}),
    ("Mara Lind was appointed by who as the chief judge of Tromso?", {"chief", "judg"}),
])
def test_the_focus_of_a_contracted_or_in_situ_question_is_read(question: str, focus: set[str]) -> None:
    assert question_focus(question, {}) >= focus
    assert question_head(question, {})


@pytest.mark.parametrize(("context", "question", "answer", "wrong"), [
    (COUPLE, "Who's the husband of the writer of Lantern Tales?", "Oda Brenner.", "Oda Brenner"),
    (COURT, "Mara Lind was appointed by who as the chief judge of Tromso?", "It was Northern Appeals Court.",
     "Northern Appeals Court"),
    (CABINET, "The Chancellor of the Exchequer from 1905 to 1908 led the ministry with which other person?",
     "It was Ruth Amsel.", "Ruth Amsel"),
    (CABINET, "Apart from the Welsh reformer who was Chancellor of the Exchequer, who led the ministry?",
     "Ruth Amsel.", "Ruth Amsel"),
    (SONG, "Who co-wrote Paper Boats with a Dutch singer and painter married to Rob Haas?", "Lena Kroft.",
     "Lena Kroft"),
    (RACE, "What real life sprinter did Dan Okoro act with in Track Nine?", "Kid Flash.", "Kid Flash"),
    (WRITER, "Rolf Amsel co-wrote a song with which Dutch singer, songwriter and painter?", "Tom Aalto.", "Tom Aalto"),
    # the question's own subject under another of its names
    (SENATE, "The Lenz Act's sponsor, Senator Maria Lenz, was a senator from which state?", "Ofelia Lenz.",
     "Ofelia Lenz"),
    (SITCOM, 'Who played Carla Mertz\'s cousin in the sitcom "Harbor Lane"?', "It was Carol Wynn.", "Carol Wynn"),
    # a capitalised common word closing a name ("Still") is the name's
    (OPERA, "What American composer who died in 1970 sang with an opera company in Memphis?", "Nina Vale.",
     "Nina Vale"),
])
def test_a_wrong_name_is_flagged_on_the_name(context: str, question: str, answer: str, wrong: str) -> None:
    start = answer.index(wrong)
    found = unsupported_facts(answer, [context], question)
    assert any(f.start < start + len(wrong) and start < f.end for f in found), found


@pytest.mark.parametrize(("context", "question", "answer"), [
    (COUPLE, "Who's the husband of the writer of Lantern Tales?", "Paul Hesketh."),
    (COURT, "Mara Lind was appointed by who as the chief judge of Tromso?", "It was Teodor Sandvik."),
    (CABINET, "The Chancellor of the Exchequer from 1905 to 1908 led the ministry with which other person?",
     "It was Sir Colin Vane."),
    (SONG, "Who co-wrote Paper Boats with a Dutch singer and painter married to Rob Haas?", "Ivo Marsh."),
    # (a "co-" verb without "with": the answer is the one the question describes)
    (SONG, "Which Dutch singer and painter co-wrote Paper Boats?", "Lena Kroft."),
    # (nor one asking for the partner itself: written after the first rule misread a HaluEval dev question)
    (WRITER, "Rolf Amsel co-wrote a song with which Dutch singer, songwriter and painter?", "Lena Kroft."),
    (RACE, "What real life sprinter did Dan Okoro act with in Track Nine?", "Abel Mensah."),
    (SENATE, "The Lenz Act's sponsor, Senator Maria Lenz, was a senator from which state?", "Vermont."),
    (SENATE, "What is the full name of Senator Maria Lenz?", "Maria Ofelia Lenz."),
    (OPERA, "What American composer who died in 1970 sang with an opera company in Memphis?", "Aldo Brent Still."),
    # roles joined before one "by" are each the name's; words before a verb head are no modifiers
    (MOVIE, '"Glass Hour" is a song featured in a trailer for a film directed by who ?', "It was Ines Marr."),
    (HORROR, "Who directed a 2012 horror film starring an actress who trained at a drama school in Oslo?",
     "Emil Roth."),
])
def test_the_right_name_is_not_flagged(context: str, question: str, answer: str) -> None:
    assert not unsupported_facts(answer, [context], question)
