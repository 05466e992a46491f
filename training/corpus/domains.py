"""The fact schemas of each domain: attributes, their value makers and sentence templates.

Templates use ``{e}`` (the entity) and ``{v}`` (the value). In every template tuple the
last entry is reserved for the held-out split (see :mod:`training.corpus.splits`), so
held-out examples are worded in ways the model never saw; whole domains are held out too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from training.corpus import names
from training.corpus.values import (
    Choice,
    Date,
    Money,
    Quantity,
    Unit,
    Value,
    Version,
    Year,
)

Maker = Callable[[random.Random], Value]


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    make: Maker
    facts: tuple[str, ...]
    questions: tuple[str, ...]
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    noun: str
    entity: Callable[[random.Random], str]
    attributes: tuple[Attribute, ...]
    background: tuple[str, ...]


def qty(low: float, high: float, unit: Unit, decimals: int = 0) -> Maker:
    return lambda rng: Quantity(round(rng.uniform(low, high), decimals), unit, decimals, low, high)


def money(low: float, high: float, *, millions: bool = True) -> Maker:
    def make(rng: random.Random) -> Value:
        currency = rng.choice(_CURRENCIES)
        amount = round(rng.uniform(low, high), 1 if millions else 0)
        return Money(amount, currency, millions, low, high)

    return make


def date(first: int, last: int) -> Maker:
    return lambda rng: Date(rng.randint(first, last), rng.randint(1, 12), rng.randint(1, 28))


def year(first: int, last: int) -> Maker:
    return lambda rng: Year(rng.randint(first, last))


def pick(pool: Callable[[], tuple[tuple[str, ...], ...]] | tuple[tuple[str, ...], ...]) -> Maker:
    def make(rng: random.Random) -> Value:
        items = pool() if callable(pool) else pool
        return Choice(items, rng.randrange(len(items)))

    return make


def polar(yes: tuple[str, ...], no: tuple[str, ...], kind: str = "negation") -> Maker:
    pool = (yes, no)
    return lambda rng: Choice(pool, rng.randrange(2), kind)  # type: ignore[arg-type]


def relation(*options: tuple[str, ...]) -> Maker:
    return lambda rng: Choice(options, rng.randrange(len(options)), "relation")


_CURRENCIES = (("$", "USD", "US dollars"), ("€", "EUR", "euros"), ("£", "GBP", "pounds sterling"), ("", "CHF", "Swiss francs"), ("¥", "JPY", "yen"))

KM = Unit(("km", "kilometres", "kilometers"), (("miles",), ("metres",)))
M = Unit(("m", "metres", "meters"), (("feet",), ("km",)))
KM2 = Unit(("km²", "square kilometres", "square kilometers"), (("square miles",), ("hectares",)))
C = Unit(("°C", "degrees Celsius"), (("°F", "degrees Fahrenheit"), ("kelvin",)))
MG = Unit(("mg", "milligrams"), (("g", "grams"), ("micrograms", "mcg")))
HOURS = Unit(("hours", "hrs", "h"), (("minutes",), ("days",)))
DAYS = Unit(("days",), (("weeks",), ("months",)))
MONTHS = Unit(("months",), (("years",), ("weeks",)))
YEARS = Unit(("years",), (("months",), ("decades",)))
PCT = Unit(("%", "percent", "per cent"), ())
PEOPLE_COUNT = Unit(("people", "residents", "inhabitants"), ())
EMPLOYEES = Unit(("employees", "staff", "people"), ())
NONE = Unit(("",), ())
GRAMS = Unit(("g", "grams"), (("kg",), ("ounces",)))
DENSITY = Unit(("g/cm³", "grams per cubic centimetre"), (("kg/m³",),))
SECONDS = Unit(("seconds", "s"), (("milliseconds", "ms"), ("minutes",)))
MB = Unit(("MB", "megabytes"), (("GB", "gigabytes"), ("KB", "kilobytes")))
USD = Unit(("$",), (), prefix=True)
SEATS = Unit(("seats", "spectators"), ())
MW = Unit(("MW", "megawatts"), (("GW", "gigawatts"), ("kW", "kilowatts")))
KMH = Unit(("km/h", "kilometres per hour"), (("mph", "miles per hour"),))

_LICENSES = (("MIT", "the MIT license"), ("Apache-2.0", "the Apache License 2.0"), ("BSD-3-Clause", "the 3-clause BSD license"), ("GPL-3.0", "the GNU GPL version 3"), ("MPL-2.0", "the Mozilla Public License 2.0"))
_DRUG_CLASSES = (("an antibiotic",), ("a beta blocker",), ("an anticoagulant",), ("a proton pump inhibitor",), ("an antihistamine",), ("a statin",), ("an ACE inhibitor",), ("a corticosteroid",))
_DRUGS = ("Amoxadrin", "Cefralex", "Lisoprine", "Metovastin", "Pantozol", "Loratex", "Warfadine", "Predniral", "Ibuzepam", "Zolmicort", "Nexaprin", "Clarivax", "Dolotrex", "Sertavil")
_ELEMENTS = ("Hydrogen", "Helium", "Lithium", "Beryllium", "Boron", "Carbon", "Nitrogen", "Oxygen", "Fluorine", "Neon", "Sodium", "Magnesium", "Aluminium", "Silicon", "Phosphorus", "Sulfur", "Chlorine", "Argon", "Potassium", "Calcium", "Titanium", "Chromium", "Iron", "Cobalt", "Nickel", "Copper", "Zinc", "Gallium", "Germanium", "Selenium", "Silver", "Tin", "Iodine", "Tungsten", "Platinum", "Gold", "Mercury", "Lead", "Uranium", "Radium")
_EVENTS = ("Treaty of", "Battle of", "Siege of", "Congress of", "Uprising in", "Founding of", "Great Fire of", "Flood of", "Council of", "Exposition of")
_TEAMS = ("Rovers", "United", "Falcons", "Athletic", "Wanderers", "Titans", "Comets", "Rangers", "Sharks", "Harriers")
_SPORTS_LEAGUES = (("the Premier Division",), ("the National League",), ("the Coastal Conference",), ("the Northern League",), ("the Continental Cup",), ("the Super Series",))
_POLICIES = ("Remote Work Policy", "Data Retention Policy", "Travel Expense Policy", "Refund Policy", "Parental Leave Policy", "Acceptable Use Policy", "Privacy Notice", "Tenancy Agreement", "Return Policy", "Overtime Policy")
_AUDIENCES = (("all full-time employees",), ("contractors",), ("customers in the European Union",), ("new tenants",), ("managers",), ("students",), ("registered members",))
_MOONS = ("Tethra", "Olvane", "Kessa", "Morrow", "Ixion-b", "Phaedra", "Calypso-2", "Velis", "Nereth", "Obrin")
_STARS = (("a red dwarf",), ("a yellow dwarf",), ("a white dwarf",), ("a red giant",), ("a blue giant",), ("a neutron star",))
_COLORS = (("black",), ("silver",), ("white",), ("midnight blue",), ("forest green",), ("rose gold",))
_FILES = (("config.yaml",), ("settings.toml",), ("app.json",), (".env",), ("pyproject.toml",), ("service.ini",))
_PROTOCOLS = (("HTTP/2", "HTTP version 2"), ("WebSockets",), ("gRPC",), ("TLS 1.3",), ("HTTP/1.1",), ("QUIC",))

GEOGRAPHY = Domain(
    "geography", "country", lambda rng: rng.choice(names.countries())[0],
    (
        Attribute("capital", pick(names.places),
                  ("The capital of {e} is {v}.", "{v} serves as the capital city of {e}.", "{e}'s seat of government is in {v}.", "Its capital, {v}, is the largest city of {e}."),
                  ("What is the capital of {e}?", "Which city is the capital of {e}?", "Where is the seat of government of {e}?"),
                  ("The capital of {e} is {v}.", "{e}'s capital city is {v}.", "{v} is the capital of {e}.", "The seat of government of {e} is located in {v}.")),
        Attribute("population", qty(200_000, 90_000_000, PEOPLE_COUNT),
                  ("{e} has a population of about {v}.", "Roughly {v} live in {e}.", "The census counted {v} in {e}.", "{e} is home to approximately {v}."),
                  ("What is the population of {e}?", "How many people live in {e}?", "How large is the population of {e}?"),
                  ("{e} has about {v}.", "The population of {e} is roughly {v}.", "Around {v} live in {e}.", "The country counts approximately {v}.")),
        Attribute("area", qty(1_000, 2_000_000, KM2),
                  ("{e} covers an area of {v}.", "The total area of {e} is {v}.", "With {v}, {e} is a mid-sized country.", "{e} spans {v} of land."),
                  ("How large is {e}?", "What is the area of {e}?", "How much land does {e} cover?"),
                  ("{e} covers {v}.", "The area of {e} is {v}.", "It has a total area of {v}.", "{e} spans roughly {v}.")),
        Attribute("currency", pick(names.currencies),
                  ("The official currency of {e} is the {v}.", "In {e}, payments are made in the {v}.", "{e} uses the {v} as its currency.", "The {v} is the legal tender of {e}."),
                  ("What currency does {e} use?", "Which currency is used in {e}?", "What is the legal tender in {e}?"),
                  ("{e} uses the {v}.", "The currency of {e} is the {v}.", "Payments in {e} are made with the {v}.", "The legal tender there is the {v}.")),
        Attribute("language", pick(names.languages),
                  ("The official language of {e} is {v}.", "Most people in {e} speak {v}.", "{v} is the language of government in {e}.", "{e} recognises {v} as its official language."),
                  ("What language is spoken in {e}?", "What is the official language of {e}?", "Which language do people in {e} speak?"),
                  ("The official language of {e} is {v}.", "People in {e} mainly speak {v}.", "{v} is the official language there.", "In {e}, the language of government is {v}.")),
        Attribute("highest", qty(300, 8_000, M),
                  ("The highest point in {e} rises to {v}.", "{e}'s tallest mountain reaches {v} above sea level.", "At {v}, the summit is the highest point of {e}.", "The peak elevation in {e} is {v}."),
                  ("How high is the highest point in {e}?", "What is the highest elevation in {e}?", "How tall is the highest mountain of {e}?"),
                  ("The highest point in {e} is {v} high.", "Its tallest mountain reaches {v}.", "The peak elevation of {e} is {v}.", "{e} rises to {v} at its highest point.")),
        Attribute("independence", date(1800, 1995),
                  ("{e} declared independence on {v}.", "Independence was proclaimed in {e} on {v}.", "On {v}, {e} became independent.", "{e} has been independent since {v}."),
                  ("When did {e} become independent?", "On what date did {e} declare independence?", "When was the independence of {e} proclaimed?"),
                  ("{e} became independent on {v}.", "It declared independence on {v}.", "Independence was proclaimed on {v}.", "{e} gained its independence on {v}.")),
        Attribute("coast", polar(("has a coastline", "borders the sea"), ("is landlocked", "has no coastline")),
                  ("{e} {v}.", "Geographically, {e} {v}.", "Unlike its neighbours, {e} {v}.", "Maps show that {e} {v}."),
                  ("Does {e} have access to the sea?", "Is {e} landlocked?", "Does {e} border an ocean?"),
                  ("{e} {v}.", "The country {v}.", "In short, {e} {v}.", "Geographically, it {v}.")),
    ),
    ("{e} is a country with a long and varied history.", "Tourism plays a role in the economy of {e}.", "The climate of {e} varies considerably between regions.", "{e} is a member of several international organisations."),
)

ELEMENTS = Domain(
    "science", "element", lambda rng: rng.choice(_ELEMENTS),
    (
        Attribute("atomic_number", qty(1, 118, NONE),
                  ("{e} has the atomic number {v}.", "The atomic number of {e} is {v}.", "{e} sits at position {v} in the periodic table.", "With atomic number {v}, {e} is a chemical element."),
                  ("What is the atomic number of {e}?", "Which atomic number does {e} have?", "What is the position of {e} in the periodic table?"),
                  ("The atomic number of {e} is {v}.", "{e} has atomic number {v}.", "It is element number {v}.", "{e} occupies position {v} in the periodic table.")),
        Attribute("melting", qty(-250, 3400, C),
                  ("{e} melts at {v}.", "The melting point of {e} is {v}.", "At {v}, {e} turns from solid to liquid.", "{e} has a melting point of {v}."),
                  ("What is the melting point of {e}?", "At what temperature does {e} melt?", "When does {e} become liquid?"),
                  ("{e} melts at {v}.", "Its melting point is {v}.", "The melting point of {e} is {v}.", "{e} becomes liquid at {v}.")),
        Attribute("density", qty(0.1, 22.0, DENSITY, 2),
                  ("{e} has a density of {v}.", "The density of {e} is {v}.", "Measured at room temperature, {e} weighs {v}.", "A density of {v} is typical for {e}."),
                  ("What is the density of {e}?", "How dense is {e}?", "How heavy is {e} per volume?"),
                  ("The density of {e} is {v}.", "{e} has a density of {v}.", "Its density is {v}.", "{e} weighs {v}.")),
        Attribute("discovered", year(1600, 1990),
                  ("{e} was discovered in {v}.", "The discovery of {e} dates to {v}.", "Chemists first isolated {e} in {v}.", "{e} has been known since {v}."),
                  ("When was {e} discovered?", "In what year was {e} discovered?", "When was {e} first isolated?"),
                  ("{e} was discovered in {v}.", "It was first isolated in {v}.", "The discovery of {e} took place in {v}.", "{e} has been known since {v}.")),
        Attribute("discoverer", pick(names.people),
                  ("{e} was discovered by {v}.", "{v} is credited with the discovery of {e}.", "The chemist {v} first identified {e}.", "Credit for isolating {e} goes to {v}."),
                  ("Who discovered {e}?", "Who is credited with discovering {e}?", "Which chemist first identified {e}?"),
                  ("{e} was discovered by {v}.", "{v} discovered {e}.", "The discovery is credited to {v}.", "{v} first isolated {e}.")),
        Attribute("radioactive", polar(("is radioactive", "emits ionising radiation"), ("is not radioactive", "is stable and not radioactive")),
                  ("{e} {v}.", "Laboratory tests confirm that {e} {v}.", "In its common form {e} {v}.", "It is well established that {e} {v}."),
                  ("Is {e} radioactive?", "Does {e} emit radiation?", "Is {e} a radioactive element?"),
                  ("{e} {v}.", "The element {v}.", "In short, {e} {v}.", "In its common form, {e} {v}.")),
        Attribute("state", relation(("a solid",), ("a liquid",), ("a gas",)),
                  ("At room temperature {e} is {v}.", "{e} exists as {v} under standard conditions.", "Under normal conditions, {e} is {v}.", "{e} is found as {v} at 25 degrees."),
                  ("What state is {e} in at room temperature?", "Is {e} a solid, liquid or gas?", "In which phase is {e} under standard conditions?"),
                  ("{e} is {v} at room temperature.", "Under standard conditions, it is {v}.", "It exists as {v}.", "{e} is {v} under normal conditions.")),
    ),
    ("{e} is used in a number of industrial processes.", "Compounds of {e} are studied in many laboratories.", "{e} appears in several textbooks on inorganic chemistry.", "The properties of {e} have been measured many times."),
)

MEDICINE = Domain(
    "medicine", "medication", lambda rng: rng.choice(_DRUGS),
    (
        Attribute("dose", qty(5, 1000, MG),
                  ("The usual adult dose of {e} is {v}.", "Adults typically take {v} of {e}.", "{e} is prescribed at {v} per dose for adults.", "A standard adult dose of {e} is {v}."),
                  ("What is the adult dose of {e}?", "How much {e} should an adult take?", "What dose of {e} is usual for adults?"),
                  ("The usual adult dose is {v}.", "Adults should take {v} of {e}.", "{e} is given at {v} per dose.", "A typical dose of {e} for adults is {v}.")),
        Attribute("interval", qty(4, 24, HOURS),
                  ("{e} is taken every {v}.", "Doses of {e} should be spaced {v} apart.", "Patients repeat the dose of {e} every {v}.", "The dosing interval of {e} is {v}."),
                  ("How often is {e} taken?", "What is the dosing interval of {e}?", "How far apart should doses of {e} be?"),
                  ("{e} is taken every {v}.", "Doses are spaced {v} apart.", "It should be taken every {v}.", "The interval between doses is {v}.")),
        Attribute("max_daily", qty(50, 4000, MG),
                  ("Do not exceed {v} of {e} per day.", "The maximum daily dose of {e} is {v}.", "No more than {v} of {e} should be taken in 24 hours.", "Daily intake of {e} is capped at {v}."),
                  ("What is the maximum daily dose of {e}?", "How much {e} can be taken per day at most?", "What is the daily limit for {e}?"),
                  ("The maximum daily dose of {e} is {v}.", "Patients should not take more than {v} per day.", "No more than {v} should be taken in a day.", "Daily intake is capped at {v}.")),
        Attribute("food", polar(("should be taken with food", "must be taken with a meal"), ("should be taken on an empty stomach", "must not be taken with food")),
                  ("{e} {v}.", "According to the label, {e} {v}.", "Pharmacists advise that {e} {v}.", "The leaflet states that {e} {v}."),
                  ("Should {e} be taken with food?", "Can {e} be taken with a meal?", "Does {e} need to be taken with food?"),
                  ("{e} {v}.", "The medication {v}.", "In short, {e} {v}.", "According to the leaflet, it {v}.")),
        Attribute("class", pick(_DRUG_CLASSES),
                  ("{e} is {v}.", "{e} belongs to the drug class of {v}.", "Pharmacologically, {e} is {v}.", "Doctors classify {e} as {v}."),
                  ("What kind of drug is {e}?", "Which drug class does {e} belong to?", "What type of medication is {e}?"),
                  ("{e} is {v}.", "It is classified as {v}.", "{e} belongs to the class of {v}.", "Pharmacologically, it is {v}.")),
        Attribute("approved", year(1960, 2024),
                  ("{e} was approved in {v}.", "Regulators approved {e} in {v}.", "{e} has been on the market since {v}.", "Approval for {e} was granted in {v}."),
                  ("When was {e} approved?", "Since when has {e} been on the market?", "In what year was {e} approved?"),
                  ("{e} was approved in {v}.", "It has been on the market since {v}.", "Approval was granted in {v}.", "Regulators approved it in {v}.")),
        Attribute("children", polar(("is approved for children", "may be given to children"), ("is not approved for children", "must not be given to children")),
                  ("{e} {v}.", "The prescribing information notes that {e} {v}.", "Paediatric guidance says {e} {v}.", "According to regulators, {e} {v}."),
                  ("Can children take {e}?", "Is {e} approved for children?", "May {e} be given to a child?"),
                  ("{e} {v}.", "The drug {v}.", "In short, {e} {v}.", "According to the guidance, it {v}.")),
    ),
    ("{e} is available in tablet form.", "Side effects of {e} are listed in the package leaflet.", "Patients should consult a pharmacist about {e}.", "{e} should be stored at room temperature away from light."),
)

FINANCE = Domain(
    "finance", "company", names.company,
    (
        Attribute("revenue", money(5, 9000),
                  ("{e} reported annual revenue of {v}.", "Revenue at {e} reached {v} last year.", "Last fiscal year, {e} earned {v} in revenue.", "The annual report of {e} shows sales of {v}."),
                  ("What was the revenue of {e}?", "How much revenue did {e} report?", "What were the annual sales of {e}?"),
                  ("{e} reported revenue of {v}.", "Its annual revenue was {v}.", "Revenue reached {v}.", "The company earned {v} in revenue.")),
        Attribute("growth", qty(-30, 60, PCT, 1),
                  ("Revenue of {e} grew by {v} year over year.", "{e} recorded growth of {v}.", "Sales at {e} changed by {v} compared with the prior year.", "Year-over-year growth at {e} was {v}."),
                  ("How much did {e} grow?", "What was the revenue growth of {e}?", "By how much did sales of {e} change?"),
                  ("Revenue grew by {v}.", "{e} grew {v} year over year.", "Growth at {e} was {v}.", "Sales changed by {v} compared with the prior year.")),
        Attribute("ceo", pick(names.people),
                  ("{e} is led by chief executive {v}.", "{v} is the CEO of {e}.", "The company {e} appointed {v} as chief executive.", "Under CEO {v}, {e} expanded abroad."),
                  ("Who is the CEO of {e}?", "Who leads {e}?", "Who is the chief executive of {e}?"),
                  ("The CEO of {e} is {v}.", "{v} leads {e}.", "{e} is run by {v}.", "Its chief executive is {v}.")),
        Attribute("hq", pick(names.places),
                  ("{e} is headquartered in {v}.", "The head office of {e} is in {v}.", "{e} runs its operations from {v}.", "{v} is home to the headquarters of {e}."),
                  ("Where is {e} headquartered?", "Where is the head office of {e}?", "In which city is {e} based?"),
                  ("{e} is headquartered in {v}.", "Its head office is in {v}.", "The company is based in {v}.", "{e} has its headquarters in {v}.")),
        Attribute("employees", qty(40, 250_000, EMPLOYEES),
                  ("{e} employs {v}.", "The workforce of {e} numbers {v}.", "{e} has a headcount of {v}.", "About {v} work for {e}."),
                  ("How many employees does {e} have?", "How large is the workforce of {e}?", "How many people work at {e}?"),
                  ("{e} employs {v}.", "It has {v}.", "The workforce numbers {v}.", "About {v} work at {e}.")),
        Attribute("dividend", polar(("paid a dividend", "returned cash to shareholders through a dividend"), ("did not pay a dividend", "suspended its dividend")),
                  ("Last year {e} {v}.", "In its last fiscal year, {e} {v}.", "Shareholders were told that {e} {v}.", "The board confirmed that {e} {v}."),
                  ("Did {e} pay a dividend?", "Does {e} pay dividends?", "Did shareholders of {e} receive a dividend?"),
                  ("{e} {v}.", "Last year the company {v}.", "In short, {e} {v}.", "According to the board, it {v}.")),
        Attribute("founded", year(1850, 2020),
                  ("{e} was founded in {v}.", "The company {e} dates back to {v}.", "Since its founding in {v}, {e} has grown steadily.", "{e} opened for business in {v}."),
                  ("When was {e} founded?", "In what year was {e} established?", "How old is {e}?"),
                  ("{e} was founded in {v}.", "It was established in {v}.", "The company dates back to {v}.", "{e} opened in {v}.")),
        Attribute("trend", relation(("rose", "increased", "went up"), ("fell", "decreased", "went down")),
                  ("The share price of {e} {v} last quarter.", "Last quarter, shares of {e} {v}.", "Investors saw the stock of {e} as it {v}.", "The stock of {e} {v} over the quarter."),
                  ("How did the share price of {e} move?", "Did the stock of {e} rise or fall?", "What happened to shares of {e} last quarter?"),
                  ("The share price of {e} {v}.", "Shares of {e} {v} last quarter.", "Its stock {v}.", "Over the quarter the stock {v}.")),
    ),
    ("{e} publishes its results every quarter.", "Analysts follow {e} closely.", "{e} operates in a competitive market.", "The annual meeting of {e} takes place in spring."),
)

PRODUCTS = Domain(
    "product_support", "product", names.product,
    (
        Attribute("warranty", qty(6, 60, MONTHS),
                  ("The {e} comes with a warranty of {v}.", "A {v} warranty covers the {e}.", "Every {e} is covered for {v}.", "The manufacturer guarantees the {e} for {v}."),
                  ("How long is the warranty on the {e}?", "What warranty does the {e} have?", "For how long is the {e} covered?"),
                  ("The {e} has a {v} warranty.", "The warranty lasts {v}.", "It is covered for {v}.", "The manufacturer guarantees it for {v}.")),
        Attribute("battery", qty(2, 120, HOURS),
                  ("The battery of the {e} lasts up to {v}.", "On a full charge the {e} runs for {v}.", "Battery life of the {e} is rated at {v}.", "Users get around {v} of use from the {e}."),
                  ("How long does the battery of the {e} last?", "What is the battery life of the {e}?", "How long does the {e} run on a charge?"),
                  ("The battery lasts up to {v}.", "The {e} runs for {v} on a charge.", "Its battery life is {v}.", "You get about {v} of use.")),
        Attribute("price", qty(19, 2500, USD),
                  ("The {e} retails for {v}.", "The list price of the {e} is {v}.", "Customers can buy the {e} for {v}.", "At launch the {e} cost {v}."),
                  ("How much does the {e} cost?", "What is the price of the {e}?", "What does the {e} sell for?"),
                  ("The {e} costs {v}.", "Its price is {v}.", "It retails for {v}.", "The list price is {v}.")),
        Attribute("release", date(2015, 2025),
                  ("The {e} was released on {v}.", "Sales of the {e} began on {v}.", "The {e} went on sale on {v}.", "The launch date of the {e} was {v}."),
                  ("When was the {e} released?", "When did the {e} go on sale?", "What is the launch date of the {e}?"),
                  ("The {e} was released on {v}.", "It went on sale on {v}.", "The launch date was {v}.", "Sales began on {v}.")),
        Attribute("weight", qty(50, 5000, GRAMS),
                  ("The {e} weighs {v}.", "With a weight of {v}, the {e} is easy to carry.", "The {e} has a mass of {v}.", "The {e} tips the scales at {v}."),
                  ("How much does the {e} weigh?", "What is the weight of the {e}?", "How heavy is the {e}?"),
                  ("The {e} weighs {v}.", "Its weight is {v}.", "It weighs {v}.", "The device has a mass of {v}.")),
        Attribute("waterproof", polar(("is waterproof", "can be used in the rain"), ("is not waterproof", "must be kept away from water")),
                  ("The {e} {v}.", "According to the manual, the {e} {v}.", "Support staff confirm that the {e} {v}.", "The specification sheet says the {e} {v}."),
                  ("Is the {e} waterproof?", "Can the {e} get wet?", "Can I use the {e} in the rain?"),
                  ("The {e} {v}.", "The device {v}.", "In short, the {e} {v}.", "According to the manual, it {v}.")),
        Attribute("color", pick(_COLORS),
                  ("The {e} ships in {v}.", "The {e} is sold in a {v} finish.", "Buyers receive the {e} in {v}.", "The only finish offered for the {e} is {v}."),
                  ("What colour is the {e}?", "Which finish does the {e} come in?", "In what colour is the {e} sold?"),
                  ("The {e} comes in {v}.", "It ships in {v}.", "The finish is {v}.", "The only colour offered is {v}.")),
    ),
    ("The {e} can be registered on the manufacturer's website.", "A quick-start guide is included with the {e}.", "Spare parts for the {e} are available from authorised dealers.", "Firmware updates for the {e} are released regularly."),
)

HISTORY = Domain(
    "history", "event", lambda rng: f"{rng.choice(_EVENTS)} {rng.choice(names.places())[0]}",
    (
        Attribute("date", date(1200, 1950),
                  ("The {e} took place on {v}.", "On {v}, the {e} began.", "Historians date the {e} to {v}.", "The {e} happened on {v}."),
                  ("When did the {e} take place?", "On what date did the {e} happen?", "When was the {e}?"),
                  ("The {e} took place on {v}.", "It happened on {v}.", "The {e} is dated to {v}.", "It began on {v}.")),
        Attribute("leader", pick(names.people),
                  ("The {e} was led by {v}.", "{v} led the {e}.", "At the head of the {e} stood {v}.", "Chroniclers name {v} as the leader of the {e}."),
                  ("Who led the {e}?", "Who was the leader of the {e}?", "Who headed the {e}?"),
                  ("The {e} was led by {v}.", "{v} led it.", "Its leader was {v}.", "{v} headed the {e}.")),
        Attribute("participants", qty(200, 120_000, PEOPLE_COUNT),
                  ("Some {v} took part in the {e}.", "The {e} involved about {v}.", "Records list {v} at the {e}.", "About {v} were present at the {e}."),
                  ("How many people took part in the {e}?", "How many were involved in the {e}?", "How large was the {e}?"),
                  ("About {v} took part in the {e}.", "It involved roughly {v}.", "Some {v} were involved.", "Records count {v}.")),
        Attribute("duration", qty(1, 300, DAYS),
                  ("The {e} lasted {v}.", "It took {v} for the {e} to end.", "The {e} continued for {v}.", "The {e} ended after {v}."),
                  ("How long did the {e} last?", "What was the duration of the {e}?", "For how long did the {e} go on?"),
                  ("The {e} lasted {v}.", "It went on for {v}.", "It ended after {v}.", "The {e} continued for {v}.")),
        Attribute("outcome", relation(("ended in victory for the defenders", "was won by the defenders"), ("ended in defeat for the defenders", "was lost by the defenders"), ("ended without a clear winner", "ended in a stalemate")),
                  ("The {e} {v}.", "In the end, the {e} {v}.", "Contemporary accounts agree the {e} {v}.", "Ultimately the {e} {v}."),
                  ("How did the {e} end?", "What was the outcome of the {e}?", "Who won the {e}?"),
                  ("The {e} {v}.", "It {v}.", "In the end it {v}.", "Ultimately, the {e} {v}.")),
        Attribute("document", polar(("produced a written agreement", "ended with a signed document"), ("produced no written agreement", "ended without any signed document")),
                  ("The {e} {v}.", "Archives show that the {e} {v}.", "Notably, the {e} {v}.", "Sources confirm the {e} {v}."),
                  ("Did the {e} produce a written agreement?", "Was anything signed at the {e}?", "Did the {e} end with a document?"),
                  ("The {e} {v}.", "It {v}.", "In short, the {e} {v}.", "According to the archives, it {v}.")),
    ),
    ("The {e} is discussed in many history books.", "Several museums hold artefacts related to the {e}.", "Historians continue to debate the causes of the {e}.", "The {e} is commemorated every year."),
)

SOFTWARE = Domain(
    "software_docs", "library", names.library,
    (
        Attribute("version", lambda rng: Version((rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 20))),
                  ("The latest release of {e} is version {v}.", "{e} {v} is the current stable release.", "Version {v} of {e} was published last month.", "The current version of {e} is {v}."),
                  ("What is the latest version of {e}?", "Which version of {e} is current?", "What is the newest release of {e}?"),
                  ("The latest version of {e} is {v}.", "The current stable release is {v}.", "{e} is at version {v}.", "The newest release is {v}.")),
        Attribute("port", qty(1024, 65000, NONE),
                  ("By default {e} listens on port {v}.", "The default port of {e} is {v}.", "{e} binds to port {v} unless configured otherwise.", "Out of the box, {e} serves on port {v}."),
                  ("Which port does {e} use by default?", "What is the default port of {e}?", "On which port does {e} listen?"),
                  ("{e} listens on port {v} by default.", "The default port is {v}.", "It binds to port {v}.", "By default it uses port {v}.")),
        Attribute("license", pick(_LICENSES),
                  ("{e} is released under {v}.", "The source code of {e} is available under {v}.", "{e} is distributed under the terms of {v}.", "Licensing: {e} uses {v}."),
                  ("What license does {e} use?", "Under which license is {e} released?", "How is {e} licensed?"),
                  ("{e} is released under {v}.", "It uses {v}.", "The license is {v}.", "{e} is distributed under {v}.")),
        Attribute("timeout", qty(1, 300, SECONDS),
                  ("The default request timeout in {e} is {v}.", "Requests made by {e} time out after {v}.", "{e} waits {v} before giving up on a request.", "Unless overridden, {e} uses a timeout of {v}."),
                  ("What is the default timeout of {e}?", "How long does {e} wait before a request times out?", "After how long do requests in {e} time out?"),
                  ("The default timeout is {v}.", "Requests time out after {v}.", "{e} waits {v} before giving up.", "It uses a timeout of {v}.")),
        Attribute("async", polar(("supports asynchronous calls", "provides an async API"), ("does not support asynchronous calls", "has no async API")),
                  ("{e} {v}.", "The documentation states that {e} {v}.", "As of this release, {e} {v}.", "According to the changelog, {e} {v}."),
                  ("Does {e} support async?", "Can {e} be used asynchronously?", "Does {e} have an async API?"),
                  ("{e} {v}.", "The library {v}.", "In short, {e} {v}.", "According to the docs, it {v}.")),
        Attribute("config", pick(_FILES),
                  ("{e} reads its settings from {v}.", "Configuration for {e} lives in {v}.", "Place the settings for {e} in {v}.", "{e} looks for {v} at start-up."),
                  ("Where does {e} read its configuration?", "Which file configures {e}?", "What is the configuration file of {e}?"),
                  ("{e} reads its settings from {v}.", "Configuration lives in {v}.", "The configuration file is {v}.", "It looks for {v} at start-up.")),
        Attribute("protocol", pick(_PROTOCOLS),
                  ("{e} communicates over {v}.", "The transport used by {e} is {v}.", "Connections from {e} use {v}.", "{e} relies on {v} for transport."),
                  ("Which protocol does {e} use?", "What transport does {e} rely on?", "How does {e} communicate?"),
                  ("{e} uses {v}.", "It communicates over {v}.", "The transport is {v}.", "Connections use {v}.")),
    ),
    ("{e} is maintained by a small group of volunteers.", "Bug reports for {e} are tracked publicly.", "{e} can be installed with the usual package manager.", "The documentation of {e} includes a tutorial."),
)

# ---- held-out domains: never seen in training ----

SPORTS = Domain(
    "sports", "team", lambda rng: f"{rng.choice(names.places())[0]} {rng.choice(_TEAMS)}",
    (
        Attribute("founded", year(1860, 2015),
                  ("The {e} were founded in {v}.", "Since {v}, the {e} have played professionally.", "The club {e} dates from {v}."),
                  ("When were the {e} founded?", "In what year was the {e} club formed?"),
                  ("The {e} were founded in {v}.", "The club was formed in {v}.", "They have existed since {v}.")),
        Attribute("capacity", qty(3_000, 95_000, SEATS),
                  ("The home stadium of the {e} holds {v}.", "The {e} play in a ground with room for {v}.", "Their stadium has a capacity of {v}."),
                  ("How many people fit in the stadium of the {e}?", "What is the capacity of the {e} stadium?"),
                  ("The stadium holds {v}.", "Their ground has room for {v}.", "It has a capacity of {v}.")),
        Attribute("coach", pick(names.people),
                  ("The {e} are coached by {v}.", "{v} has been head coach of the {e} since last season.", "Head coach {v} leads the {e}."),
                  ("Who coaches the {e}?", "Who is the head coach of the {e}?"),
                  ("The {e} are coached by {v}.", "Their head coach is {v}.", "{v} coaches the team.")),
        Attribute("titles", qty(0, 40, NONE),
                  ("The {e} have won {v} championships.", "In their history the {e} collected {v} league titles.", "The trophy cabinet of the {e} holds {v} titles."),
                  ("How many championships have the {e} won?", "How many titles do the {e} have?"),
                  ("The {e} have won {v} championships.", "They have {v} titles.", "The club has collected {v} league titles.")),
        Attribute("league", pick(_SPORTS_LEAGUES),
                  ("The {e} compete in {v}.", "The {e} currently play in {v}.", "Fixtures of the {e} are part of {v}."),
                  ("In which league do the {e} play?", "What competition are the {e} part of?"),
                  ("The {e} compete in {v}.", "They play in {v}.", "The team is part of {v}.")),
        Attribute("result", relation(("won", "beat their opponents in"), ("lost", "were defeated in"), ("drew", "tied")),
                  ("The {e} {v} the final last season.", "Last season the {e} {v} the final.", "In last season's final the {e} {v} the match."),
                  ("How did the {e} do in the final?", "Did the {e} win last season's final?"),
                  ("The {e} {v} the final.", "They {v} the final last season.", "Last season they {v} the final.")),
    ),
    ("The {e} have a loyal fan base.", "Tickets for games of the {e} sell quickly.", "The {e} train at a modern facility.", "Local newspapers cover the {e} every week."),
)

POLICY = Domain(
    "legal_policy", "policy", lambda rng: f"the {rng.choice(_POLICIES)}",
    (
        Attribute("notice", qty(7, 180, DAYS),
                  ("Under {e}, notice must be given {v} in advance.", "{e} requires a notice period of {v}.", "A notice period of {v} applies under {e}."),
                  ("What notice period does {e} require?", "How much notice is needed under {e}?"),
                  ("{e} requires {v} notice.", "Notice must be given {v} in advance.", "The notice period is {v}.")),
        Attribute("window", qty(7, 120, DAYS),
                  ("Claims under {e} must be filed within {v}.", "{e} allows requests within {v}.", "The deadline for requests under {e} is {v}."),
                  ("Within what time must claims be filed under {e}?", "What is the deadline for requests under {e}?"),
                  ("Claims must be filed within {v}.", "{e} allows requests within {v}.", "Requests must be made within {v}.")),
        Attribute("applies", pick(_AUDIENCES),
                  ("{e} applies to {v}.", "The scope of {e} covers {v}.", "{e} was written for {v}."),
                  ("Who does {e} apply to?", "Who is covered by {e}?"),
                  ("{e} applies to {v}.", "It covers {v}.", "The policy was written for {v}.")),
        Attribute("allowed", polar(("permits exceptions with written approval", "allows exceptions if approved in writing"), ("does not permit any exceptions", "allows no exceptions")),
                  ("{e} {v}.", "Section 4 states that {e} {v}.", "The text makes clear that {e} {v}."),
                  ("Does {e} allow exceptions?", "Are exceptions possible under {e}?"),
                  ("{e} {v}.", "The policy {v}.", "In short, {e} {v}.")),
        Attribute("effective", date(2010, 2026),
                  ("{e} takes effect on {v}.", "{e} has been in force since {v}.", "The effective date of {e} is {v}."),
                  ("When does {e} take effect?", "What is the effective date of {e}?"),
                  ("{e} takes effect on {v}.", "It is in force from {v}.", "The effective date is {v}.")),
        Attribute("fine", qty(50, 20_000, USD),
                  ("Violations of {e} can be fined up to {v}.", "Breaching {e} carries a penalty of up to {v}.", "The maximum penalty under {e} is {v}."),
                  ("What is the penalty for violating {e}?", "How large can fines under {e} be?"),
                  ("Violations can be fined up to {v}.", "The maximum penalty is {v}.", "Breaches cost up to {v}.")),
    ),
    ("{e} is reviewed by the legal department each year.", "Questions about {e} can be sent to the compliance team.", "{e} is published on the intranet.", "{e} replaces an earlier version of the document."),
)

ASTRONOMY = Domain(
    "astronomy", "moon", lambda rng: rng.choice(_MOONS),
    (
        Attribute("diameter", qty(20, 5000, KM),
                  ("{e} has a diameter of {v}.", "Measured across, {e} spans {v}.", "The moon {e} is {v} wide."),
                  ("How big is {e}?", "What is the diameter of {e}?"),
                  ("{e} is {v} across.", "Its diameter is {v}.", "The moon spans {v}.")),
        Attribute("period", qty(0.5, 400, DAYS, 1),
                  ("{e} completes an orbit every {v}.", "The orbital period of {e} is {v}.", "One revolution of {e} takes {v}."),
                  ("How long is the orbit of {e}?", "What is the orbital period of {e}?"),
                  ("{e} orbits once every {v}.", "Its orbital period is {v}.", "One orbit takes {v}.")),
        Attribute("discovered", year(1610, 2020),
                  ("{e} was discovered in {v}.", "Astronomers first observed {e} in {v}.", "The discovery of {e} was announced in {v}."),
                  ("When was {e} discovered?", "In what year was {e} first observed?"),
                  ("{e} was discovered in {v}.", "It was first observed in {v}.", "Its discovery dates to {v}.")),
        Attribute("discoverer", pick(names.people),
                  ("{e} was discovered by {v}.", "{v} first spotted {e}.", "The astronomer {v} is credited with finding {e}."),
                  ("Who discovered {e}?", "Who first observed {e}?"),
                  ("{e} was discovered by {v}.", "{v} found it.", "The discovery is credited to {v}.")),
        Attribute("star", pick(_STARS),
                  ("The planet that {e} orbits circles {v}.", "The host star of the {e} system is {v}.", "{e} belongs to a system around {v}."),
                  ("What kind of star does the system of {e} have?", "What is the host star of {e}?"),
                  ("The host star is {v}.", "Its system orbits {v}.", "{e} belongs to a system around {v}.")),
        Attribute("atmosphere", polar(("has a thin atmosphere", "is surrounded by a thin atmosphere"), ("has no atmosphere", "lacks any atmosphere")),
                  ("{e} {v}.", "Observations indicate that {e} {v}.", "Spectra show {e} {v}."),
                  ("Does {e} have an atmosphere?", "Is there an atmosphere on {e}?"),
                  ("{e} {v}.", "The moon {v}.", "In short, {e} {v}.")),
    ),
    ("{e} is a target of several proposed missions.", "Images of {e} were taken by a space probe.", "{e} is too faint to see with the naked eye.", "The surface of {e} is covered with craters."),
)

TRAIN_DOMAINS: tuple[Domain, ...] = (GEOGRAPHY, ELEMENTS, MEDICINE, FINANCE, PRODUCTS, HISTORY, SOFTWARE)
HELDOUT_DOMAINS: tuple[Domain, ...] = (SPORTS, POLICY, ASTRONOMY)
