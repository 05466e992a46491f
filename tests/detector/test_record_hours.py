"""Opening hours, times and days said against a business record's ``hours`` field.

Written before the rule, from real records of RAGTruth's data-to-text task (odd ``source_id``,
the half open to error study; the name and hours are copied from the record, the rest of it left
out): wrong claims of the kinds its annotators marked (a day the place is closed said open, hours
of one day given to a range of days, "open seven days a week" over a week with a closed day) and
faithful restatements of the same hours. Every wrong claim uses only times the record states
somewhere, so the look-up of clock times alone does not see it. A day the record leaves out, or
gives as "0:0-0:0" while other days have hours, is a closed day.
"""

from __future__ import annotations

import json

import pytest

from truthlens.detector.facts import unsupported_facts

HOURS = {
    13603: ("Tinker's Burgers", {d: "11:0-17:0" for d in (
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")}),
    13637: ("Hollister Brewing Company", {
        "Monday": "11:30-19:30", "Tuesday": "11:30-19:30", "Wednesday": "11:30-19:30", "Thursday": "11:30-19:30",
        "Friday": "11:30-20:0", "Saturday": "11:30-20:0", "Sunday": "11:30-19:30"}),
    13669: ("Jeannine's American Bakery Restaurant", {
        "Monday": "0:0-0:0", "Wednesday": "7:30-13:30", "Thursday": "7:30-13:30", "Friday": "7:30-13:30",
        "Saturday": "7:30-14:0", "Sunday": "7:30-14:0"}),
    13673: ("Holdren's Grill", {
        "Monday": "16:0-21:0", "Tuesday": "16:0-21:0", "Wednesday": "16:0-21:0", "Thursday": "16:0-21:0",
        "Friday": "16:0-22:0", "Saturday": "16:0-22:0", "Sunday": "16:0-21:0"}),
    13709: ("Spudnuts & Bagels", {
        "Monday": "5:0-17:0", "Tuesday": "5:0-17:0", "Wednesday": "5:0-17:0", "Thursday": "5:0-17:0",
        "Friday": "5:0-17:0", "Saturday": "5:0-17:0", "Sunday": "5:0-13:0"}),
    13713: ("Mala Town", {
        "Monday": "17:0-21:0", "Tuesday": "17:0-21:0", "Wednesday": "11:0-15:0", "Thursday": "17:0-21:0",
        "Friday": "11:0-22:0", "Saturday": "12:0-22:0", "Sunday": "12:0-22:0"}),
    13737: ("Live Oak Cafe", {
        "Monday": "8:0-14:0", "Tuesday": "16:30-21:0", "Wednesday": "16:30-21:0", "Thursday": "16:30-21:0",
        "Friday": "16:30-21:0", "Saturday": "8:0-14:0", "Sunday": "8:0-14:0"}),
    13761: ("The Worker Bee Cafe", {
        "Monday": "0:0-0:0", "Tuesday": "8:0-14:0", "Wednesday": "8:0-14:0", "Thursday": "8:0-14:0",
        "Friday": "8:0-14:0", "Saturday": "8:0-14:0", "Sunday": "8:0-14:0"}),
    13995: ("Uncorked Wine Tasting and Kitchen", {
        "Monday": "17:0-19:0", "Tuesday": "17:0-19:0", "Wednesday": "11:0-15:0", "Thursday": "17:0-19:0",
        "Friday": "17:0-19:0", "Saturday": "17:0-19:0", "Sunday": "17:0-19:0"}),
    14017: ("Celebration Cruises", {
        "Monday": "0:0-0:0", "Tuesday": "9:0-17:0", "Wednesday": "9:0-17:0", "Thursday": "9:0-17:0",
        "Friday": "9:0-17:0", "Saturday": "9:0-17:0", "Sunday": "9:0-17:0"}),
}


def _record(source_id: int) -> str:
    name, hours = HOURS[source_id]
    return json.dumps({"name": name, "city": "Santa Barbara", "state": "CA", "hours": hours})


@pytest.mark.parametrize(
    ("source_id", "answer", "wrong"),
    [
        (13637, "It operates from 11:30 am to 7:30 pm on weekdays and from 11:30 am to 8:00 pm on weekends.",
         "from 11:30 am to 7:30 pm on weekdays"),
        (13673, "Holdren's Grill operates from 4 pm to 10 pm from Monday to Saturday.", "4 pm to 10 pm from Monday"),
        (13713, "It is open Monday to Thursday from 5:00 PM to 9:00 PM.", "Monday to Thursday from 5:00 PM to 9:00 PM"),
        (13737, "It is open from 8:00 am to 14:00 from Monday to Friday.", "8:00 am to 14:00 from Monday to Friday"),
        (14017, "Celebration Cruises is open seven days a week.", "open seven days a week"),
        (13761, "The cafe is open from Monday to Sunday.", "open from Monday to Sunday"),
        (13669, "It is open on Tuesdays.", "open on Tuesdays"),
        (13709, "On Sunday it is open until 5 pm.", "Sunday it is open until 5 pm"),
        (13603, "It is closed on Sundays.", "closed on Sundays"),
        (13995, "On Wednesday it opens at 5 pm.", "Wednesday it opens at 5 pm"),
    ],
)
def test_hours_said_against_the_record_are_flagged(source_id: int, answer: str, wrong: str) -> None:
    at = answer.index(wrong)
    found = unsupported_facts(answer, [_record(source_id)], "Describe the business.")
    assert any(f.start < at + len(wrong) and at < f.end for f in found), found


@pytest.mark.parametrize(
    ("source_id", "answer"),
    [
        (13637, "It is open from 11:30 am to 7:30 pm Monday through Thursday, and from 11:30 am to 8 pm on "
                "Friday and Saturday."),
        (13673, "Holdren's Grill is open from 4 pm to 9 pm Sunday through Thursday and from 4 pm to 10 pm on "
                "Friday and Saturday."),
        (13713, "On Wednesday it is open from 11 am to 3 pm."),
        (13737, "It opens at 8 am on weekends."),
        (14017, "Celebration Cruises is open from Tuesday to Sunday, 9 am to 5 pm."),
        (14017, "It is closed on Mondays."),
        (13761, "The Worker Bee Cafe is open Tuesday through Sunday from 8 am to 2 pm."),
        (13669, "It is closed on Tuesdays and opens at 7:30 am from Wednesday to Sunday."),
        (13709, "It is open every day from 5 am, and on Sundays it closes at 1 pm."),
        (13603, "Tinker's Burgers is open daily from 11 am to 5 pm."),
        (13995, "It is open from 5 pm to 7 pm every day except Wednesday, when it is open from 11 am to 3 pm."),
    ],
)
def test_hours_restated_from_the_record_are_not_flagged(source_id: int, answer: str) -> None:
    assert unsupported_facts(answer, [_record(source_id)], "Describe the business.") == ()
