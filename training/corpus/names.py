"""Name pools for entities and entity-valued facts (real names from pycountry where useful)."""

from __future__ import annotations

import functools
import random

import pycountry

_FIRST = (
    "Amelia", "Rahul", "Sofia", "Kenji", "Olga", "Mateo", "Fatima", "Lars", "Chen", "Ingrid", "Tomas", "Aisha",
    "Pedro", "Yuki", "Nadia", "Emeka", "Clara", "Dmitri", "Priya", "Henrik", "Lucia", "Omar", "Greta", "Ravi",
    "Elena", "Kwame", "Marta", "Jonas", "Leila", "Viktor", "Hannah", "Arjun", "Beatriz", "Sven", "Mei", "Tariq",
)
_LAST = (
    "Okafor", "Lindqvist", "Tanaka", "Moreau", "Kowalski", "Haddad", "Fernandes", "Novak", "Brennan", "Ivanova",
    "Castillo", "Nakamura", "Schmidt", "Adeyemi", "Rossi", "Larsen", "Mehta", "Duarte", "Petrov", "Whitfield",
    "Santos", "Keller", "Abebe", "Varga", "Hughes", "Morales", "Sato", "Bergstrom", "Nguyen", "Fischer",
)
_SYLLABLES = (
    "ver", "tal", "quo", "nex", "lum", "tri", "zen", "cor", "mar", "vex", "sol", "dri", "kai", "ora", "pel",
    "tor", "ux", "an", "ly", "ri",
)
_COMPANY_TAIL = (
    "Systems", "Labs", "Holdings", "Industries", "Networks", "Foods", "Energy", "Logistics", "Bank", "Motors",
    "Analytics", "Pharma",
)
_PRODUCT_KIND = (
    "Router", "Headphones", "Smartwatch", "Vacuum", "Camera", "Speaker", "Tablet", "Kettle", "Monitor", "Drone",
    "E-Reader", "Thermostat",
)


def person(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def coined(rng: random.Random, syllables: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(syllables)).capitalize()


def company(rng: random.Random) -> str:
    return f"{coined(rng, rng.randint(2, 3))} {rng.choice(_COMPANY_TAIL)}"


def product(rng: random.Random) -> str:
    return (
        f"{coined(rng, 2)} {rng.choice(_PRODUCT_KIND)} "
        f"{rng.choice(('X', 'Pro', 'Mini', 'S', 'Max', '2', '3', 'Air', 'One'))}"
    )


def library(rng: random.Random) -> str:
    return (
        rng.choice(("py", "lib", "", "", "go-", "node-"))
        + coined(rng, 2).lower()
        + rng.choice(("", "db", "kit", "io", "js", "flow", "fs"))
    )


@functools.cache
def countries() -> tuple[tuple[str, ...], ...]:
    """Country names, each with its official name as an alias when one exists."""
    out = []
    for c in pycountry.countries:
        if "," in c.name or "(" in c.name:
            continue
        names: tuple[str, ...] = (c.name,)
        official = getattr(c, "official_name", None)
        if official and official != c.name:
            names += (official,)
        out.append(names)
    return tuple(out)


@functools.cache
def places() -> tuple[tuple[str, ...], ...]:
    """Place names (pycountry subdivisions with plain ASCII names)."""
    return tuple(
        (s.name,)
        for s in pycountry.subdivisions
        if s.name.isascii() and s.name.replace(" ", "").isalpha() and len(s.name) < 18
    )


@functools.cache
def currencies() -> tuple[tuple[str, ...], ...]:
    return tuple((c.name,) for c in pycountry.currencies if "," not in c.name and "(" not in c.name)


@functools.cache
def languages() -> tuple[tuple[str, ...], ...]:
    return tuple(
        (lang.name,)
        for lang in pycountry.languages
        if getattr(lang, "type", "") == "L" and lang.name.isascii() and " " not in lang.name and "(" not in lang.name
    )


@functools.cache
def people() -> tuple[tuple[str, ...], ...]:
    """Every first/last name pairing (no short aliases: "A. Okafor" would name several people)."""
    return tuple((f"{first} {last}",) for first in _FIRST for last in _LAST)
