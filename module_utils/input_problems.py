"""How a check of a role's inputs words its problems: how a message shows a value (shown: a stray
space visible, a YAML boolean named as one). The rules themselves live with each role's checks
(module_utils/server_inputs.py, module_utils/router_inputs.py, library/bench_store.py)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# How YAML 1.1 (Ansible's loader) reads these words unquoted: as booleans, not as the words.
YAML_TRUE_WORDS = "yes/on/true"
YAML_FALSE_WORDS = "no/off/false"


def shown(value: Any) -> str:
    """A value as a message shows it: a string quoted as Python's repr quotes it, so that a stray
    space or tab is visible ('tp-size ', with a note on it); a YAML boolean named as one, since a
    word written unquoted (yes, no, on, off) reached us as True or False; anything else as repr."""
    if isinstance(value, bool):
        words = YAML_TRUE_WORDS if value else YAML_FALSE_WORDS
        return f"the YAML boolean {value} ({words} unquoted is a boolean, not the word: quote the word you meant)"
    if isinstance(value, str) and value != value.strip():
        return f"{value!r} (note the space around it)"
    return repr(value)



# A whole number written with thousands separators (495,488, 495_488, 495 488): -e passes it as a
# string; Python's int() takes 495_488 and a comma makes it a word, so it is refused by name.
_GROUPED_NUMBER = re.compile(r"^\s*[0-9]{1,3}([,_ ][0-9]{3})+\s*$")


def separator_problem(variable: str, value: Any) -> str | None:
    """The message for a whole number written with thousands separators (a string such as
    '495,488', '495_488' or '495 488'), naming the variable and the number to write; None for
    anything else (other checks judge it)."""
    if isinstance(value, str) and _GROUPED_NUMBER.match(value):
        digits = re.sub(r"[^0-9]", "", value)
        return (f"{variable} is {value.strip()!r}, a number with thousands separators: write it without them, "
                f"e.g. -e {variable}={digits}")
    return None


def positive_int(value: Any) -> int | None:
    """value as an int when it is a whole number of at least 1, else None: an int (a YAML
    boolean is not one), a float without a fraction (what Jinja's arithmetic makes), or a string of
    digits (-e passes numbers as strings; a space around them is refused, as a server arg is written
    into the launch script as given). The checks of every role's counts, sizes, ports and limits
    take a number by this rule (sweep, server args, multinode, router)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value > 0 else None
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value):
        return int(value) or None
    return None


def tcp_port(value: Any) -> int | None:
    """value as a TCP port (a whole number, positive_int's rule, of 1-65535), else None."""
    number = positive_int(value)
    return number if number is not None and number <= 65535 else None


def yaml_boolean_names(names: Any) -> list[str]:
    """The names of a dict (the profiles') that YAML read as booleans: an unquoted yes/on/true or
    no/off/false key is True/False in the play, and reaches a module as the JSON key true/false."""
    return [str(n).lower() for n in (names if isinstance(names, (Mapping, list, tuple)) else [])
            if isinstance(n, bool) or n in ("true", "false")]


def yaml_boolean_profile_problem(variable: str, names: list[str]) -> str:
    """The message for profiles whose names YAML read as booleans (yaml_boolean_names)."""
    return (f"{variable} has a profile named {' and '.join(names)}: an unquoted yes/on/true (or no/off/false) "
            "as a name is a YAML boolean, not the word (and yes: and on: become one profile). Quote the "
            'name, e.g. "yes": {...}, and the names that refer to it (sglang_profile, bench_profiles)')


def number_of(value, name, low=None, high=None, integer=False, allow_none=False):
    """value as a number within (low, high]; ValueError naming the variable otherwise (and the
    value as given: the word, not the 0 a Jinja int filter would make of it)."""
    if value is None and allow_none:
        return None
    text = str(value).strip()
    grouped = separator_problem(name, value) if integer else None
    if grouped:  # (Python's int() would take 495_488 as it is)
        raise ValueError(grouped)
    try:
        if isinstance(value, bool) or value is None:
            raise ValueError
        number = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind}, got {shown(value)}") from None
    if (low is not None and number <= low) or (high is not None and number > high):
        raise ValueError(f"{name} must be above {low}{f' and at most {high}' if high is not None else ''}, "
                         f"got {shown(value)}")
    return number


def string_for_list(value, variable, example):
    """The message for a string where a list belongs (-e VAR=4,8 gives the string '4,8')."""
    return (f"{variable} must be a list, got the string {value!r}: write it as a YAML list, e.g. {variable}: "
            f"{example}, or on the command line as JSON: -e '{{\"{variable}\": {example}}}'")
